"""The report tables and Markdown (performance.md, final_report.md, benchmark.md), from the
records of kopt.report.results."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import pandas as pd

from kopt.loop import decide
from kopt.loop.state import describe_next
from kopt.report.render import render
from kopt.report.results import KEPT, Results, VersionData, class_geomean
from kopt.workspace.commands import for_target
from kopt.workspace.records import gpu_times

CLOCK_WORDS = {"profiler": "the profiler's GPU time", "script": "the script's median"}


def first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


# --- performance.md -----------------------------------------------------------------------------


def change_pct(v: VersionData) -> float | None:
    """The change of a version against the best before it, all classes together: compare.json's
    per-class deltas (each on the clock that decided its class), weighted by the class's configs,
    which is the geometric mean of the per-config ratios. compare.json holds it per class only.
    None for a version compared with nothing."""
    rows = v.compare.get("per_class") or []
    n = Counter(r["class"] for r in v.compare.get("per_config") or [])
    if not rows or not all(n[r["class"]] for r in rows):
        return None
    log = sum(n[r["class"]] * math.log1p(r["delta_pct"] / 100) for r in rows) / sum(n[r["class"]] for r in rows)
    return math.expm1(log) * 100


CLOCK_LINES = {
    "ncu": "clock: ncu. The GPU time that decides is Nsight Compute's, recorded outside the kernel's process.",
    "in-process": (
        "clock: in-process. There was no Nsight Compute record: the GPU time that decides was recorded in the "
        "kernel's own process, which could have written it. Keeps on it are marked untrusted."
    ),
    "judge": (
        "clock: judge. The judge's own round trip around each interpreter call decides, not the kernel "
        "process's own perf_counter."
    ),
}


def clocks(res: Results) -> list[str]:
    """What each clock that timed a version in this run means (CLOCK_LINES), in order of first use."""
    seen = dict.fromkeys(
        v.compare.get("clock") for v in res.versions if v.compare.get("per_config") or v.decision == "baseline"
    )
    return [CLOCK_LINES[c] for c in seen if c in CLOCK_LINES]


def untrusted_keeps(res: Results) -> list[dict]:
    """Each keep that rests on what the judge did not measure itself, with why (compare.json's ``untrusted``)."""
    return [{"version": v.name, "why": v.compare["untrusted"]} for v in res.versions if v.compare.get("untrusted")]


def status_of(v: VersionData) -> str:
    """A version's decision, marked when its keep rests on what the judge did not measure itself."""
    return f"{v.decision} (untrusted)" if v.compare.get("untrusted") else v.decision


def performance_rows(res: Results) -> list[dict]:
    """Baseline and kept versions: their times as the fold recorded them (both clocks, geometric
    means over all configs) and their change against the best before them (compare.json)."""
    rows = []
    for v in res.versions:
        if v.decision not in KEPT:
            continue
        t = v.fold_times() or {"script": {}, "profiler": {}}
        tc = v.compare.get("target_classes", "all")
        rows.append(
            {
                "date": (v.compare.get("provenance") or {}).get("created", "")[:10],
                "version": v.name,
                "hash": ((v.compare.get("provenance") or {}).get("kernel_sha256") or "")[:12],
                "commit": ((v.compare.get("provenance") or {}).get("commit") or "")[:12],
                "status": status_of(v),
                "command": for_target(res.command, f"results/{v.name}/compare.json"),
                "target": ", ".join(tc) if isinstance(tc, list) else tc,
                "hottest": v.hottest() or "-",
                "script_us": class_geomean(t["script"]),
                "gpu_us": class_geomean(t["profiler"], list(t["script"])),
                "change_pct": change_pct(v),
                "explanation": first_line(v.meta.get("hypothesis")) or ("baseline" if v.decision == "baseline" else ""),
            }
        )
    return rows


def class_rows(res: Results) -> dict[str, list[dict]]:
    """Per config class, baseline and kept versions: the class's times as the fold recorded them
    and the class's delta against the best before them (compare.json's per_class row)."""
    out: dict[str, list[dict]] = {}
    for cls in res.classes:
        rows = []
        for v in res.versions:
            if v.decision not in KEPT:
                continue
            keys, t = v.class_keys(cls), v.fold_times() or {"script": {}, "profiler": {}}
            b = v.bottleneck_of(cls)
            rows.append(
                {
                    "version": v.name,
                    "status": status_of(v),
                    "script_us": class_geomean(t["script"], keys),
                    "gpu_us": class_geomean(t["profiler"], keys),
                    "change_pct": v.per_class(cls).get("delta_pct"),
                    "roofline": b.get("roofline_fraction_min"),
                    "bottleneck": b.get("bottleneck", "-"),
                }
            )
        out[cls] = rows
    return out


def bound_rows(res: Results) -> list[dict]:
    """Per version (baseline, kept, and the last) and config: the bound on work Nsight Compute does
    not see (kopt.measure.bound) with its standard error, three of them as a share of the GPU time
    (the noise rule it serves is 1%), the unseen time (the bound less the GPU time) and the calls
    per batch. Empty where no version has a bound (the CPU, another clock)."""
    rows = []
    for v in res.versions:
        if (v.decision not in KEPT and v is not res.last) or "bound_us" not in v.bench:
            continue
        for r in v.bench.itertuples():
            if pd.isna(r.bound_us) or pd.isna(getattr(r, "gpu_us", float("nan"))):
                continue
            se = None if pd.isna(r.bound_se_us) else float(r.bound_se_us)
            rows.append(
                {
                    "version": v.name,
                    "key": r.config_key,
                    "gpu_us": float(r.gpu_us),
                    "bound_us": float(r.bound_us),
                    "se_us": se,
                    "three_se_pct": None if se is None else 300 * se / float(r.gpu_us),
                    "unseen_us": float(r.bound_us) - float(r.gpu_us),
                    "calls": None if pd.isna(r.bound_calls) else int(r.bound_calls),
                }
            )
    return rows


def splits(res: Results) -> list[dict]:
    out = []
    for v in res.versions:
        s = v.compare.get("split")
        if v.decision == "split-recommended" and s:
            new = [k for k, c in v.class_of().items() if c in s["improved"]]
            old = [k for k, c in v.class_of().items() if c not in s["improved"]]
            best = v.compare.get("best_before")
            out.append({"version": v.name, "best": best, "new_configs": new, "old_configs": old, **s})
    return out


def stop_summary(res: Results) -> dict | None:
    st = res.state
    if not st.get("stop"):
        return None
    best = res.best
    t = (best.fold_times() if best else None) or {"script": {}, "profiler": {}}
    return {
        "time": (res.last.compare.get("provenance") or {}).get("created"),
        "reason": st.get("stop_reason"),
        "best": best.name if best else None,
        "best_script_us": class_geomean(t["script"]),
        "best_gpu_us": class_geomean(t["profiler"], list(t["script"])),
        "regressions": st.get("recent_regressions", []),
    }


def throttled(res: Results) -> list[str]:
    """Configs whose SM clock under load was under 75% of its maximum (bench.csv `throttled`)."""
    out = []
    for v in res.versions:
        if "throttled" in v.bench:
            hot = [r.config_key for r in v.bench.itertuples() if r.throttled is True or r.throttled == "True"]
            out += [f"{v.name} {k}" for k in hot]
    return out


def reviews(res: Results) -> list[dict]:
    """Comparisons flagged for review: a class faster than the best by more than review_speedup, a
    class whose two clocks disagree or whose bound on unseen work failed (disputed) or did not
    resolve (unresolved, with the numbers), a decision a person settled by hand (override)."""
    out = []
    for v in res.versions:
        c = v.compare
        flags = list(c.get("review") or [])
        flags += [
            f"{r['class']}: {r['note']}"
            for r in c.get("per_class", [])
            if r.get("verdict") in ("disputed", "unresolved")
        ]
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
            text = text or "none recorded"
            out.append({"class": c["class"], "bottleneck": c["bottleneck"], "strategies": recs, "text": text})
    return out


def render_performance(res: Results, recommended: list[dict] | None = None) -> str:
    return render(
        "performance.md.j2",
        recommended=recommended or [],
        throttled=throttled(res),
        rows=performance_rows(res),
        classes=class_rows(res),
        bounds=bound_rows(res),
        splits=splits(res),
        reviews=reviews(res),
        stop=stop_summary(res),
        env=res.env,
        device=res.last.compare.get("device"),
        method=res.last.compare.get("method"),
        clocks=clocks(res),
        untrusted=untrusted_keeps(res),
    )


# --- final_report.md and benchmark.md ---------------------------------------------------------------

AGAINST = {"v0": "v0", "eager": "torch eager", "compile": "torch.compile"}


def bench_times(df: pd.DataFrame | None) -> dict | None:
    """A torch baseline's bench.csv as the fold reads a version's (rule `compare`, through
    ``gpu_times``): the script's medians and the GPU times on their clock; None unless every config ran."""
    if df is None or not len(df) or (df["status"] != "ok").any():
        return None
    gpu = gpu_times(df)
    return {
        "script": {r.config_key: float(r.median_us) for r in df.itertuples()},
        "profiler": gpu["gpu_us"],
        "clock": gpu["clock"],
        "bound": gpu["bound"],
        "launches": gpu["launches"],
    }


def against(res: Results) -> dict[str, dict | None]:
    """The best version compared with v0, torch eager and torch.compile, by the decision fold
    itself (``kopt.loop.decide.decide``, the other as the best and the best version as the
    candidate): per class the clock that decides (``basis``) and ``delta_pct``, per config both
    clocks' times. None where there is nothing to compare with.

    These comparisons are not in compare.json, so they are made here, and only here: compare.json
    compares each version with the best before it, never the best with v0 (unless v0 was the
    best before it), and never with torch, whose timings are separate bench.csv files under
    results/baselines/, outside the fold. Running the fold's own comparison (on the versions' times
    as compare.json records them, on torch's as bench.csv has them) keeps its rules (which clock
    decides, the geometric mean per class) instead of a second copy of them."""
    best = res.best
    mine = best.fold_times() if best else None
    others = {
        "v0": res.versions[0].fold_times(),
        "eager": bench_times(res.baselines.get("eager")),
        "compile": bench_times(res.baselines.get("compile")),
    }
    out: dict[str, dict | None] = {}
    for name, other in others.items():
        if not mine or not other:
            out[name] = None
            continue
        theirs = {"version": AGAINST[name], "medians": other["script"], "gpu_us": other["profiler"]}
        theirs.update(clock=other["clock"], bound=other["bound"], launches=other["launches"])
        cand = decide.Candidate(
            best.name,
            "ok",
            medians=mine["script"],
            class_of=best.class_of(),
            gpu_us=mine["profiler"],
            clock=mine["clock"],
            bound=mine["bound"],
            launches=mine["launches"],
        )
        comp, _ = decide.decide({**decide.initial_state(), "best": theirs}, cand, decide.Params())
        out[name] = comp if comp["per_class"] else None
    return out


def _speedup(comp: dict | None, cls: str) -> float | None:
    """How many times faster the best is on this class (the other's time over the best's)."""
    row = next((r for r in comp["per_class"] if r["class"] == cls), None) if comp else None
    return 100.0 / (100.0 + row["delta_pct"]) if row else None


def _config_us(comp: dict | None, key: str) -> tuple[float | None, float | None]:
    """One config's (other, best) times in a comparison, on the clock that decided its class."""
    if not comp:
        return None, None
    row = next(r for r in comp["per_config"] if r["key"] == key)
    basis = next(r["basis"] for r in comp["per_class"] if r["class"] == row["class"])
    if basis == "profiler":
        return row["best_gpu_us"], row["candidate_gpu_us"]
    return row["best_us"], row["candidate_us"]


def clock_notes(res: Results, comps: dict[str, dict | None]) -> list[str]:
    """Where a comparison was decided on another clock than the best's times are given on (one
    side has no profiler time for a class): said, not hidden."""
    clock = res.best.clock() if res.best else "script"
    out = []
    for name, comp in comps.items():
        off = [r for r in (comp or {}).get("per_class", []) if r["basis"] != clock]
        if off:
            basis = off[0]["basis"]
            out.append(
                f"Against {AGAINST[name]}, {', '.join(r['class'] for r in off)} compared on {CLOCK_WORDS[basis]} "
                "(the profiler's GPU time decides only where both sides have it for every config of a class)."
            )
    return out


def speedups(res: Results, comps: dict[str, dict | None] | None = None) -> list[dict]:
    """Per class: the best version's time and its speedup against v0, torch eager and torch.compile
    (``against``), its roofline fraction and the gap to the roofline target (config
    ``roofline_target``)."""
    best = res.best
    mine = best.fold_times() if best else None
    if not mine:
        return []
    comps = against(res) if comps is None else comps
    clock, target = best.clock(), res.target_fraction
    rows = []
    for cls in res.classes:
        b = best.bottleneck_of(cls)
        frac = b.get("roofline_fraction_min")
        rows.append(
            {
                "class": cls,
                "best_us": class_geomean(mine[clock], best.class_keys(cls)),
                "vs_v0": _speedup(comps["v0"], cls),
                "vs_eager": _speedup(comps["eager"], cls),
                "vs_compile": _speedup(comps["compile"], cls),
                "roofline": frac,
                "gap": None if frac is None or target is None else max(target - frac, 0.0),
                "bottleneck": b.get("bottleneck", "-"),
                "next": [
                    f"{d['idea']} ({d['evidence']})" if d.get("evidence") else d["idea"]
                    for d in b.get("next_directions", [])[:2]
                ],
            }
        )
    return rows


def bottleneck_path(res: Results) -> list[dict]:
    return [
        {
            "version": v.name,
            "decision": v.decision,
            "by_class": {c: v.bottleneck_of(c).get("bottleneck", "-") for c in res.classes},
        }
        for v in res.versions
    ]


def render_final(res: Results, plots: list[str]) -> str:
    path = [
        {
            "version": v.name,
            "decision": status_of(v),
            "reason": v.compare.get("reason"),
            "detail": v.compare.get("detail"),
            "hypothesis": first_line(v.meta.get("hypothesis")),
        }
        for v in res.versions
    ]
    comps = against(res)
    return render(
        "final_report.md.j2",
        best=res.best.name if res.best else None,
        path=path,
        speedups=speedups(res, comps),
        target=res.target_fraction,
        clock_notes=clock_notes(res, comps),
        bottlenecks=bottleneck_path(res),
        classes=res.classes,
        state=res.state,
        plots=plots,
        clock=res.best.clock() if res.best else "script",
        clocks=clocks(res),
        untrusted=untrusted_keeps(res),
        device=res.last.compare.get("device"),
        method=res.last.compare.get("method"),
        baselines=baseline_problems(res),
        next_step=describe_next(res.next_step) if res.next_step else None,
    )


def baseline_problems(res: Results) -> dict[str, str]:
    """Per torch baseline, one sentence: the configs that gave no figure and the first one's
    error; otherwise the configs whose profiled calls were disputed (recorded, not refused, for
    trusted torch code: their figures stand) and the first note. One the graph did not run beside
    one it ran: config ``baselines`` (kopt.workspace.settings.torch_baselines)."""
    out = {
        impl: "not run in this graph (config `baselines`: `auto` runs it on a GPU, not on the CPU interpreter, "
        'where it builds C++ for the CPU; `--config "baselines=[eager,compile]"` asks for it)'
        for impl in ("eager", "compile")
        if res.baselines and impl not in res.baselines
    }
    for impl, df in res.baselines.items():
        bad = df[df["status"] != "ok"]
        notes = df["profiler_note"].dropna() if "profiler_note" in df else []
        if len(bad):
            out[impl] = (
                f"no figure on {len(bad)} config(s) (their cells are empty); the first one's reason: "
                f"{bad['error'].iloc[0]}"
            )
        elif len(notes):
            out[impl] = f"{len(notes)} config(s) noted, their figures kept; the first: {notes.iloc[0]}"
    return out


def benchmark_rows(res: Results, comps: dict[str, dict | None] | None = None) -> list[dict]:
    """Per config: the best version's time and, from ``against``, v0's, torch eager's and
    torch.compile's and the best's speedup against each."""
    best = res.best
    mine = best.fold_times() if best else None
    if not mine:
        return []
    comps = against(res) if comps is None else comps
    rows = []
    for k, t in mine[best.clock()].items():
        row = {"key": k, "class": best.class_of()[k], "best_us": t}
        for name in AGAINST:
            other, ours = _config_us(comps[name], k)
            row[f"{name}_us"] = other
            row[f"vs_{name}"] = other / ours if other and ours else None
        rows.append(row)
    return rows


def render_benchmark(res: Results) -> str:
    notes = baseline_problems(res)
    comps = against(res)
    return render(
        "benchmark.md.j2",
        best=res.best.name if res.best else None,
        rows=benchmark_rows(res, comps),
        clock_notes=clock_notes(res, {k: c for k, c in comps.items() if k != "v0"}),
        clock=res.best.clock() if res.best else "script",
        gpu_clock=res.best.compare.get("clock") if res.best else None,
        notes=notes,
        calls=res.baseline_calls,
        device=res.last.compare.get("device"),
        method=res.last.compare.get("method"),
    )
