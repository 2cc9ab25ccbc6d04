"""The reports, from result files alone (no torch, no GPU): performance.md, final_report.md,
benchmark.md and the plots. Any machine can re-render them from a committed results/ tree.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import yaml

from .commands import for_target
from .decide import geomean
from .render import render

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


def _ratio(new: dict[str, float], old: dict[str, float], keys=None) -> float | None:
    keys = [k for k in (keys or new) if k in new and k in old and new[k] > 0 and old[k] > 0]
    return geomean(new[k] / old[k] for k in keys) if keys else None


def _baseline_times(df: pd.DataFrame | None, clock: str) -> dict[str, float]:
    if df is None or not len(df) or (df["status"] != "ok").any():
        return {}
    col = "profiler_us" if clock == "profiler" and df["profiler_us"].notna().all() else "median_us"
    return {r.config_key: float(getattr(r, col)) for r in df.itertuples()}


def first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


# --- performance.md -----------------------------------------------------------------------------


def performance_rows(res: Results) -> list[dict]:
    rows, prev = [], None
    for v in res.versions:
        if v.decision not in KEPT:
            continue
        script, gpu = v.times("script"), v.times("profiler") if v.clock() == "profiler" else {}
        change = None
        if prev is not None:
            clock = "profiler" if gpu and prev.clock() == "profiler" else "script"
            r = _ratio(v.times(clock), prev.times(clock))
            change = (r - 1) * 100 if r else None
        tc = v.compare.get("target_classes", "all")
        rows.append(
            {
                "date": (v.compare.get("provenance") or {}).get("created", "")[:10],
                "version": v.name,
                "hash": ((v.compare.get("provenance") or {}).get("kernel_sha256") or "")[:12],
                "status": v.decision,
                "command": for_target(res.command, f"results/{v.name}/compare.json"),
                "target": ", ".join(tc) if isinstance(tc, list) else tc,
                "hottest": v.hottest() or "-",
                "script_us": geomean(script.values()) if script else None,
                "gpu_us": geomean(gpu.values()) if gpu else None,
                "change_pct": change,
                "explanation": first_line(v.meta.get("hypothesis")) or ("baseline" if v.decision == "baseline" else ""),
            }
        )
        prev = v
    return rows


def class_rows(res: Results) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for cls in res.classes:
        rows, prev = [], None
        for v in res.versions:
            if v.decision not in KEPT:
                continue
            keys = [k for k, c in v.class_of().items() if c == cls]
            script = {k: t for k, t in v.times("script").items() if k in keys}
            gpu = {k: t for k, t in v.times("profiler").items() if k in keys} if v.clock() == "profiler" else {}
            change = None
            if prev is not None:
                clock = "profiler" if gpu and prev.clock() == "profiler" else "script"
                r = _ratio(v.times(clock), prev.times(clock), keys)
                change = (r - 1) * 100 if r else None
            b = v.bottleneck_of(cls)
            rows.append(
                {
                    "version": v.name,
                    "status": v.decision,
                    "script_us": geomean(script.values()) if script else None,
                    "gpu_us": geomean(gpu.values()) if gpu else None,
                    "change_pct": change,
                    "roofline": b.get("roofline_fraction_min"),
                    "bottleneck": b.get("bottleneck", "-"),
                }
            )
            prev = v
        out[cls] = rows
    return out


def splits(res: Results) -> list[dict]:
    out = []
    for v in res.versions:
        s = v.compare.get("split")
        if v.decision == "split-recommended" and s:
            new = [k for k, c in v.class_of().items() if c in s["improved"]]
            old = [k for k, c in v.class_of().items() if c not in s["improved"]]
            out.append({"version": v.name, "best": v.compare.get("best_before"), "new_configs": new, "old_configs": old, **s})
    return out


def stop_summary(res: Results) -> dict | None:
    st = res.state
    if not st.get("stop"):
        return None
    best = res.best
    return {
        "time": (res.last.compare.get("provenance") or {}).get("created"),
        "reason": st.get("stop_reason"),
        "best": best.name if best else None,
        "best_script_us": geomean(best.times("script").values()) if best and best.ok else None,
        "best_gpu_us": geomean(best.times("profiler").values()) if best and best.clock() == "profiler" else None,
        "regressions": st.get("recent_regressions", []),
    }


def throttled(res: Results) -> list[str]:
    """Configs whose SM clock under load was under 75% of its maximum (bench.csv `throttled`)."""
    out = []
    for v in res.versions:
        if "throttled" in v.bench:
            out += [f"{v.name} {r.config_key}" for r in v.bench.itertuples() if r.throttled is True or r.throttled == "True"]
    return out


def reviews(res: Results) -> list[dict]:
    """Comparisons flagged for review: a class faster than the best by more than review_speedup, a
    class whose two clocks disagree (disputed), a decision a person settled by hand (override)."""
    out = []
    for v in res.versions:
        c = v.compare
        flags = list(c.get("review") or [])
        flags += [f"{r['class']}: {r['note']}" for r in c.get("per_class", []) if r.get("verdict") == "disputed"]
        if c.get("override"):
            flags.append(f"overridden by hand to {c['override']['decision']}: {c['override']['reason']}")
        if flags:
            out.append({"version": v.name, "decision": v.decision, "flags": flags})
    return out


def recommendations(res: Results, store: str | Path, kernel_type: str) -> list[dict]:
    """Per class of the best version: its bottleneck and what worked before against it, from the
    project's experience store (a declared input of rule `reports`)."""
    from .experience import Store

    best, chip = res.best, res.env.get("gpu") or "cpu"
    if best is None or not best.bottleneck.get("classes"):
        return []
    out = []
    with Store(store) as st:
        for c in best.bottleneck["classes"]:
            recs = st.recommend(kernel_type, "triton", chip, c["bottleneck"], n=3)
            text = "; ".join(f"{r['strategy']} ({r['keeps']} kept of {r['tries']}, {r['basis']})" for r in recs)
            out.append({"class": c["class"], "bottleneck": c["bottleneck"], "strategies": recs, "text": text or "none recorded"})
    return out


def render_performance(res: Results, recommended: list[dict] | None = None) -> str:
    return render(
        "performance.md.j2",
        recommended=recommended or [],
        throttled=throttled(res),
        rows=performance_rows(res),
        classes=class_rows(res),
        splits=splits(res),
        reviews=reviews(res),
        stop=stop_summary(res),
        env=res.env,
        device=res.last.compare.get("device"),
        method=res.last.compare.get("method"),
    )


# --- final_report.md and benchmark.md ---------------------------------------------------------------


def speedups(res: Results) -> list[dict]:
    """Per class: the best version's speedup against v0, torch eager and torch.compile (same clock)."""
    best, v0 = res.best, res.versions[0]
    if best is None or not best.ok:
        return []
    clock = best.clock()
    eager = _baseline_times(res.baselines.get("eager"), clock)
    comp = _baseline_times(res.baselines.get("compile"), clock)
    rows = []
    for cls in res.classes:
        keys = [k for k, c in best.class_of().items() if c == cls]
        bt = best.times(clock)

        def sp(other):
            r = _ratio(other, bt, keys)
            return r if r else None

        b = best.bottleneck_of(cls)
        frac = b.get("roofline_fraction_min")
        rows.append(
            {
                "class": cls,
                "best_us": geomean(bt[k] for k in keys),
                "vs_v0": sp(v0.times(clock)) if v0.ok else None,
                "vs_eager": sp(eager),
                "vs_compile": sp(comp),
                "roofline": frac,
                "gap": None if frac is None else max((b.get("roofline") or [{}])[0].get("target_fraction", 0.9) - frac, 0.0),
                "bottleneck": b.get("bottleneck", "-"),
                "next": [d["idea"] for d in b.get("next_directions", [])[:2]],
            }
        )
    return rows


def bottleneck_path(res: Results) -> list[dict]:
    return [
        {"version": v.name, "decision": v.decision, "by_class": {c: v.bottleneck_of(c).get("bottleneck", "-") for c in res.classes}}
        for v in res.versions
    ]


def render_final(res: Results, plots: list[str]) -> str:
    path = [
        {
            "version": v.name,
            "decision": v.decision,
            "reason": v.compare.get("reason"),
            "detail": v.compare.get("detail"),
            "hypothesis": first_line(v.meta.get("hypothesis")),
        }
        for v in res.versions
    ]
    return render(
        "final_report.md.j2",
        best=res.best.name if res.best else None,
        path=path,
        speedups=speedups(res),
        bottlenecks=bottleneck_path(res),
        classes=res.classes,
        state=res.state,
        plots=plots,
        clock=res.best.clock() if res.best else "script",
        device=res.last.compare.get("device"),
        method=res.last.compare.get("method"),
        baselines={k: (v["status"] == "ok").all() for k, v in res.baselines.items()},
    )


def benchmark_rows(res: Results) -> list[dict]:
    best = res.best
    if best is None or not best.ok:
        return []
    clock = best.clock()
    bt = best.times(clock)
    eager = _baseline_times(res.baselines.get("eager"), clock)
    comp = _baseline_times(res.baselines.get("compile"), clock)
    return [
        {
            "key": k,
            "class": best.class_of()[k],
            "best_us": t,
            "eager_us": eager.get(k),
            "compile_us": comp.get(k),
            "vs_eager": eager[k] / t if k in eager else None,
            "vs_compile": comp[k] / t if k in comp else None,
        }
        for k, t in bt.items()
    ]


def render_benchmark(res: Results) -> str:
    notes = {}
    for impl, df in res.baselines.items():
        bad = df[df["status"] != "ok"]
        if len(bad):
            notes[impl] = str(bad["error"].iloc[0])
    return render(
        "benchmark.md.j2",
        best=res.best.name if res.best else None,
        rows=benchmark_rows(res),
        clock=res.best.clock() if res.best else "script",
        notes=notes,
        calls=res.baseline_calls,
        device=res.last.compare.get("device"),
        method=res.last.compare.get("method"),
    )


# --- plots --------------------------------------------------------------------------------------------


def plots(res: Results, out_dir: str | Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    label = "" if res.last.compare.get("device") not in (None, "cpu") else " (cpu-interpreter: not GPU performance)"
    files = []

    # 1. roofline: every class of every version
    ceil = res.hardware.get("ceilings") or {}
    bw = ceil.get("memory_gbps")
    fig, ax = plt.subplots(figsize=(7, 5))
    pts = []
    for i, v in enumerate(res.versions):
        for c in v.bottleneck.get("classes", []):
            for p in c.get("roofline", []):
                if p.get("arithmetic_intensity") and p.get("achieved_tflops"):
                    pts.append((v, c["class"], p))
    if pts and bw:
        ais = [p["arithmetic_intensity"] for _, _, p in pts]
        peak = max((p.get("peak_tflops") or 0) for _, _, p in pts) or None
        lo, hi = min(ais) / 4, max(ais) * 4
        if peak:
            hi = max(hi, peak * 1e3 / bw * 4)
        xs = [lo * (hi / lo) ** (j / 100) for j in range(101)]
        ys = [min(peak or math.inf, x * bw / 1e3) for x in xs]
        ax.plot(xs, ys, "k-", lw=1.5, label=f"ceiling ({bw:.0f} GB/s" + (f", {peak:.1f} TFLOP/s)" if peak else ")"))
        markers = "osD^v<>p*hX"
        for ci, cls in enumerate(res.classes):
            for v in res.versions:
                sel = [p for vv, c, p in pts if vv is v and c == cls]
                if not sel:
                    continue
                kept = v.decision in KEPT
                ax.scatter(
                    [p["arithmetic_intensity"] for p in sel],
                    [p["achieved_tflops"] for p in sel],
                    marker=markers[ci % len(markers)],
                    facecolors=f"C{res.versions.index(v) % 10}" if kept else "none",
                    edgecolors=f"C{res.versions.index(v) % 10}",
                    label=f"{v.name} {cls}" + ("" if kept else " (discarded)"),
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP/byte)")
        ax.set_ylabel("achieved TFLOP/s")
        ax.legend(fontsize=6, ncol=2)
    else:
        ax.text(0.5, 0.5, "no FLOPs/bytes or ceilings to plot", ha="center")
    ax.set_title(f"Roofline, {res.hardware.get('gpu', '?')}{label}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "roofline.png", dpi=110)
    plt.close(fig)
    files.append("roofline.png")

    # 2. per class: time and roofline fraction across versions
    for cls in res.classes:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
        names = [v.name for v in res.versions]
        for v_i, v in enumerate(res.versions):
            keys = [k for k, c in v.class_of().items() if c == cls]
            t = v.times()
            if not t:
                continue
            y = geomean(t[k] for k in keys)
            kept = v.decision in KEPT
            a1.scatter([v_i], [y], marker="o" if kept else "x", color="C0" if kept else "C3")
            f = v.bottleneck_of(cls).get("roofline_fraction_min")
            if f is not None:
                a2.scatter([v_i], [f], marker="o" if kept else "x", color="C0" if kept else "C3")
        a1.set_xticks(range(len(names)), names)
        a1.set_ylabel(f"µs ({res.last.clock()} clock, geomean)")
        a1.set_title(f"{cls}: time (o kept, x discarded)", fontsize=9)
        a2.set_xticks(range(len(names)), names)
        a2.axhline(0.9, color="k", ls="--", lw=1)
        a2.set_ylabel("fraction of the roofline")
        a2.set_title(f"{cls}: roofline fraction (target 0.9)", fontsize=9)
        if label:
            fig.suptitle(label.strip(" ()"), fontsize=9, color="C3")
        fig.tight_layout()
        name = "class_" + "".join(ch if ch.isalnum() else "_" for ch in cls) + ".png"
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        files.append(name)

    # 3. per config speedup bars of the best version
    rows = benchmark_rows(res)
    fig, ax = plt.subplots(figsize=(max(6, len(rows) * 1.2), 4))
    best, v0 = res.best, res.versions[0]
    if rows and best:
        clock = best.clock()
        v0t = v0.times(clock) if v0.ok else {}
        w = 0.27
        for j, (lab, vals) in enumerate(
            [
                ("vs v0", [v0t.get(r["key"], math.nan) / r["best_us"] for r in rows]),
                ("vs torch eager", [r["vs_eager"] or math.nan for r in rows]),
                ("vs torch.compile", [r["vs_compile"] or math.nan for r in rows]),
            ]
        ):
            ax.bar([i + (j - 1) * w for i in range(len(rows))], vals, w, label=lab)
        ax.axhline(1.0, color="k", lw=1)
        ax.set_xticks(range(len(rows)), [r["key"].replace(",dtype=", "\n") for r in rows], fontsize=6)
        ax.set_ylabel("speedup (×)")
        ax.legend(fontsize=8)
    ax.set_title(f"Speedup of the best version ({best.name if best else '-'}) per config{label}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "speedup.png", dpi=110)
    plt.close(fig)
    files.append("speedup.png")
    return files
