"""The commands kopt prints (reports, `kopt new`, `kopt status`), complete for the workspace in use.

Targets come before ``--config``: ``--config`` takes every word after it as a key=value pair, so
``snakemake --config workspace=X results/v3/compare.json`` would swallow the target.
"""

from __future__ import annotations

import json
import shlex
from pathlib import Path

TARGET = "{target}"


def overrides(config: dict, defaults: dict) -> dict:
    """The scalar config values that differ from config/config.yaml's (given with --config)."""
    return {
        k: v
        for k, v in config.items()
        if k != "workspace" and not isinstance(v, (dict, list)) and k in defaults and defaults[k] != v
    }


def snakemake_command(
    workspace: str, *, folder: str | None = None, snakefile: str | None = None, extra: dict | None = None
) -> str:
    """A template with ``{target}`` where the targets go."""
    words = ["snakemake"]
    if snakefile:
        words += ["-s", snakefile]
    if folder:
        words += ["-d", folder]
    words += ["--cores", "1", TARGET, "--config", f"workspace={workspace}"]
    words += [f"{k}={v}" for k, v in (extra or {}).items()]
    return " ".join(w if w == TARGET else shlex.quote(str(w)) for w in words)


def for_target(template: str, target: str) -> str:
    return template.replace(TARGET, target)


def from_results(workspace: str, results: str | Path) -> str:
    """The command recorded when the reports of the tree at ``results`` were last built (with its
    ``-s``, ``-d`` and ``--config`` values; results/settings/report.json), else a plain one for
    that tree (``-d`` its folder)."""
    recorded = Path(results) / "settings" / "report.json"
    if recorded.is_file():
        command = json.loads(recorded.read_text()).get("command")
        if command:
            return command
    parent = Path(results).parent
    return snakemake_command(workspace, folder=None if str(parent) in ("", ".") else str(parent))
