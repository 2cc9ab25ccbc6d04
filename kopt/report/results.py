"""The results tree read back for the reports: one record per version (compare, bench, bottleneck,
profile, metadata), from result files alone (no torch, no GPU), so any machine can re-render the
reports from a committed results/ tree. What the decision fold decided with (the times it compared,
the clock that decided each class, the deltas, the verdicts) is read from each version's
compare.json, not worked out again from bench.csv.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from kopt.loop.decide import geomean
from kopt.loop.state import target_stop

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

    def fold_times(self) -> dict[str, dict[str, float]] | None:
        """The per-config times the decision fold recorded for this version, on both clocks
        ({"script": medians, "profiler": GPU times, only where there is one; "clock": whose GPU times,
        "bound": what bounds unseen work, "launches"}): compare.json's
        ``state.best`` after a baseline or a keep, which is this version. None for a version that
        did not become the best (its times are in its comparison rows, per class)."""
        best = (self.compare.get("state") or {}).get("best") or {}
        if best.get("version") != self.name:
            return None
        return {
            "script": dict(best.get("medians") or {}),
            "profiler": dict(best.get("gpu_us") or {}),
            "clock": best.get(
                "clock", "in-process"
            ),  # the GPU times': ncu (outside the kernel's process) or in-process
            "bound": dict(best.get("bound") or {}),
            "launches": dict(best.get("launches") or {}),
        }

    def clock(self) -> str:
        """The clock this version's own times are given on: the profiler's GPU time when the fold
        recorded one for every config, else the script's median. (Which clock decided a comparison
        is each per_class row's ``basis``; this only says what a lone version's times are.)"""
        t = self.fold_times()
        return "profiler" if t and t["script"] and set(t["script"]) <= set(t["profiler"]) else "script"

    def per_class(self, cls: str) -> dict:
        """This version's comparison of config class ``cls`` with the best before it (compare.json:
        both clocks' times and deltas, the clock that decided (``basis``), the verdict); {} for a
        version compared with nothing (the baseline, a failed one)."""
        return next((r for r in self.compare.get("per_class") or [] if r["class"] == cls), {})

    def class_us(self, cls: str) -> tuple[float | None, str]:
        """The class's time (geometric mean) and its clock: the candidate's on the clock its
        comparison was decided on; the baseline's (compared with nothing) on the profiler's clock
        when the fold has a GPU time for each of the class's configs, else on the script's."""
        row = self.per_class(cls)
        if row:
            gpu = row["basis"] == "profiler"
            return (row["candidate_gpu_us"] if gpu else row["candidate_us"]), row["basis"]
        t, keys = self.fold_times(), self.class_keys(cls)
        if not t:
            return None, "script"
        gpu = class_geomean(t["profiler"], keys)
        return (gpu, "profiler") if gpu is not None else (class_geomean(t["script"], keys), "script")

    def class_of(self) -> dict[str, str]:
        return {r.config_key: r.config_class for r in self.bench.itertuples()}

    def class_keys(self, cls: str) -> list[str]:
        return [k for k, c in self.class_of().items() if c == cls]

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
    # config `roofline_target` (rule `reports`' settings): the fraction of the roofline aimed at;
    # None when the tree records none
    target_fraction: float | None = None
    # results/state.json's next action (kopt.loop.state.next_action); None without a state file
    next_step: dict | None = None

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
        return target_stop(self.results_dir, self.last.compare["state"])


def class_geomean(times: dict[str, float], keys: list[str] | None = None) -> float | None:
    """The geometric mean of these configs' times (all of them without ``keys``), as the fold takes
    it; None when one has no time."""
    keys = list(times) if keys is None else keys
    return geomean(times[k] for k in keys) if keys and all(times.get(k) for k in keys) else None


def _json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}


def load(
    results_dir: str | Path,
    versions: list[str],
    metas: list[str],
    kernels: list[str],
    hardware: str | Path | None = None,
    settings: dict | None = None,
) -> Results:
    """The results a report reads; ``hardware`` is the GPU's measured ceilings (rule `hardware`'s
    output); ``settings`` rule `reports`' settings (default: the tree's settings/report.json, that
    rule's input), which give the roofline target."""
    rd = Path(results_dir)
    settings = _json(rd / "settings" / "report.json") if settings is None else settings
    vs = []
    for name, meta, kernel in zip(versions, metas, kernels, strict=False):
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
    return Results(
        vs,
        baselines,
        _json(rd / "env_check.json"),
        _json(Path(hardware)) if hardware else {},
        rd,
        classes,
        baseline_calls,
        target_fraction=settings.get("target_fraction"),
        next_step=_json(rd / "state.json").get("next"),
    )
