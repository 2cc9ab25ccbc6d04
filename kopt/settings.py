"""Settings files: the config values a rule depends on, written where the rule can read them.

The Snakefile writes each rule's settings to ``results/settings/<name>.json`` at parse time, and
only when the content changed, so the file's modification time moves exactly when a setting does:
Snakemake reruns the dependent jobs through their input (as it would for changed ``params:``),
jobs on other nodes read their settings from a declared input, and no job needs ``params:``
(whose change check makes Snakemake import pandas on every run: 0.2-0.8 s of each no-op rerun).
"""

from __future__ import annotations

import json
from pathlib import Path


def write_if_changed(path: str | Path, settings: dict) -> str:
    p = Path(path)
    text = json.dumps(settings, indent=1, sort_keys=True) + "\n"
    try:
        if p.read_text() == text:
            return str(p)
    except OSError:
        pass
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_suffix(".tmp")
    tmp.write_text(text)
    tmp.replace(p)
    return str(p)


def read(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())
