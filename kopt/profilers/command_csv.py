"""The CSV a benchmark command of a ``command`` target writes: one row per config, error columns
(``err_<impl>``: 0, or within the tolerance, passes) and the script's time column (``us_<impl>``).

Runs of the same command (its ``repeats``) are read together into one record per config: whether
every error column passed in every run, the worst error, and the time of each run. A CSV without
the columns the target names is one line naming the file and the column.
"""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import pandas as pd

from kopt.workspace.command import CommandSpec
from kopt.workspace.target import WorkspaceError, config_class, config_key


def columns(df: pd.DataFrame, spec: CommandSpec, file: Path) -> tuple[list[str], list[str]]:
    """(config columns, error columns) of one CSV, as the spec names them or as detected."""
    missing = [c for c in [spec.time_column, *(spec.error_columns or [])] if c not in df.columns]
    if missing:
        raise WorkspaceError(f"{file}: no column {missing[0]} (columns: {list(df.columns)})")
    errors = spec.error_columns or [c for c in df.columns if c.startswith("err_")]
    if not errors:
        raise WorkspaceError(f"{file}: no error column (err_*), and target.yaml names none in error_columns")
    timing = {spec.time_column, *errors}
    configs = spec.config_columns or [c for c in df.columns if c not in timing and not c.startswith(("us_", "err_"))]
    for c in [*configs, *spec.class_by]:
        if c not in df.columns or c not in configs:
            raise WorkspaceError(f"{file}: class_by/config column {c} is not a config column of the CSV {configs}")
    return configs, errors


def read(files: list[Path], spec: CommandSpec) -> list[dict]:
    """One record per config (in the first run's order) over every run's CSV."""
    if not files:
        raise WorkspaceError(f"the command wrote no CSV matching {spec.csv}")
    by_key: dict[str, dict] = {}
    for run, file in enumerate(files):
        df = pd.read_csv(file)
        configs, errors = columns(df, spec, file)
        for row in df.to_dict("records"):
            cfg = {c: _plain(row[c]) for c in configs}
            key = config_key(cfg)
            rec = by_key.setdefault(
                key,
                {"config": cfg, "key": key, "class": config_class(cfg, spec.class_by), "times_us": [], "errors": {}},
            )
            rec["times_us"].append(float(row[spec.time_column]))
            for e in errors:
                worst = rec["errors"].get(e, 0.0)
                val = abs(float(row[e])) if not pd.isna(row[e]) else math.inf
                rec["errors"][e] = max(worst, val)
            rec.setdefault("runs", set()).add(run)
    return [_verdict(r, len(files), spec.error_tolerance) for r in by_key.values()]


def _plain(v):
    """A CSV cell as the YAML/JSON value it names (numpy ints and floats to Python's)."""
    return v.item() if hasattr(v, "item") else v


def _verdict(rec: dict, runs: int, tol: float) -> dict:
    missing = runs - len(rec.pop("runs"))
    bad = {e: v for e, v in rec["errors"].items() if not v <= tol}
    if missing:
        reason = f"missing from {missing} of {runs} runs"
    elif bad:
        reason = ", ".join(f"{e} = {v:g}" for e, v in bad.items()) + f" (over the tolerance {tol:g})"
    else:
        reason = None
    times = rec["times_us"]
    return {**rec, "ok": reason is None, "reason": reason, "median_us": statistics.median(times) if times else None}
