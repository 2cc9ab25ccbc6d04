"""The results tree read back for the reports: one record per version (compare, bench, bottleneck,
profile, metadata), from result files alone (no torch, no GPU), so any machine can re-render the
reports from a committed results/ tree.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

KEPT = ("baseline", "keep")


@dataclass
class VersionData:
    name: str
    compare: dict
    bench: pd.DataFrame
    bottleneck: dict
    profile: dict
    meta: dict
    kernel: str

    @property
    def decision(self) -> str:
        return self.compare["decision"]

    @property
    def ok(self) -> bool:
        return bool(len(self.bench)) and (self.bench["status"] == "ok").all()

    def clock(self) -> str:
        """The clock the comparisons used: the profiler's GPU time when every config has it."""
        return "profiler" if self.ok and self.bench["profiler_us"].notna().all() else "script"

    def times(self, clock: str | None = None) -> dict[str, float]:
        col = "profiler_us" if (clock or self.clock()) == "profiler" else "median_us"
        return {r.config_key: float(getattr(r, col)) for r in self.bench.itertuples()} if self.ok else {}

    def class_of(self) -> dict[str, str]:
        return {r.config_key: r.config_class for r in self.bench.itertuples()}

    def hottest(self) -> str | None:
        names = [(c.get("hottest") or {}).get("name") for c in self.profile.get("classes", [])]
        names = [n for n in names if n]
        return max(set(names), key=names.count) if names else None

    def bottleneck_of(self, cls: str) -> dict:
        return next((c for c in self.bottleneck.get("classes", []) if c["class"] == cls), {})


@dataclass
class Results:
    versions: list[VersionData]
    baselines: dict[str, pd.DataFrame]
    env: dict
    hardware: dict
    results_dir: Path
    classes: list[str] = field(default_factory=list)
    # per torch baseline: True when the reference returns its outputs (timed with its own
    # allocation), False when it writes buffers it is given, None when unknown
    baseline_calls: dict[str, bool | None] = field(default_factory=dict)
    # the command that rebuilds a target of this workspace ({target} where the target goes)
    command: str = "snakemake --cores 1 {target}"

    def version(self, name: str) -> VersionData:
        return next(v for v in self.versions if v.name == name)

    @property
    def last(self) -> VersionData:
        return self.versions[-1]

    @property
    def best(self) -> VersionData | None:
        b = self.last.compare.get("best_after")
        return self.version(b) if b else None

    @property
    def state(self) -> dict:
        return self.last.compare["state"]


def _json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def load(
    results_dir: str | Path, versions: list[str], metas: list[str], kernels: list[str], hardware: str | Path | None = None
) -> Results:
    """The results a report reads; ``hardware`` is the GPU's measured ceilings (rule `hardware`'s output)."""
    rd = Path(results_dir)
    vs = []
    for name, meta, kernel in zip(versions, metas, kernels):
        vs.append(
            VersionData(
                name=name,
                compare=_json(rd / name / "compare.json"),
                bench=pd.read_csv(rd / name / "bench.csv"),
                bottleneck=_json(rd / name / "bottleneck.json"),
                profile=_json(rd / name / "profile" / "profile.json"),
                meta=yaml.safe_load(Path(meta).read_text()) or {} if Path(meta).is_file() else {},
                kernel=kernel,
            )
        )
    baselines, baseline_calls = {}, {}
    for impl in ("eager", "compile"):
        p = rd / "baselines" / impl / "bench.csv"
        if p.is_file():
            baselines[impl] = pd.read_csv(p)
        configs = _json(rd / "baselines" / impl / "correctness.json").get("configs") or [{}]
        baseline_calls[impl] = configs[0].get("reference_returns")
    classes = list(dict.fromkeys(vs[0].bench["config_class"])) if vs else []
    return Results(vs, baselines, _json(rd / "env_check.json"), _json(Path(hardware)) if hardware else {}, rd, classes, baseline_calls)
