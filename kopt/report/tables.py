"""The report tables and Markdown (performance.md, final_report.md, benchmark.md), from the
records of kopt.report.results."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from kopt.loop.decide import geomean
from kopt.report.render import render
from kopt.report.results import KEPT, Results
from kopt.workspace.commands import for_target


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
    from kopt.loop.experience import Store

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
