"""Jinja2 rendering of Markdown reports from result data (pure: no torch)."""

from __future__ import annotations

import re
from functools import lru_cache

import jinja2


def fmt(x, digits: int = 3) -> str:
    if x is None or x != x:  # None or NaN
        return "-"
    if isinstance(x, float):
        return f"{x:.{digits}g}" if abs(x) < 1e-3 or abs(x) >= 1e6 else f"{x:.{digits}f}".rstrip("0").rstrip(".")
    return str(x)


def cell(x) -> str:
    """Text a version or its kernel wrote (a hypothesis, a strategy, an override's reason, a fault's
    message) as one Markdown table cell or list item: one line, its pipes escaped, no HTML (a
    hypothesis of "...\n## Stop Summary ... <!--" forged a report section and hid the rest of the page)."""
    return re.sub(r"\s*[\r\n]+\s*", " ", str("" if x is None else x)).replace("|", "\\|").replace("<", "&lt;")


@lru_cache(maxsize=1)
def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("kopt.report", "templates"),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters["fmt"] = fmt
    env.filters["cell"] = cell
    env.filters["sci"] = lambda x: "-" if x is None else f"{x:.2e}"
    return env


def render(template: str, **ctx) -> str:
    return _env().get_template(template).render(**ctx)
