"""The decision fold: one version's summary + the state after the previous version -> decision, state.

Pure (no torch, no I/O). Rules:
  * v0 (or the first correct version) is the baseline; an incorrect or failed version is never kept.
  * Per config: delta % = (candidate / best - 1) * 100, negative is faster.
  * Per config class: delta % of the geometric mean of the per-config ratios, and a verdict:
    |delta| >= noise  -> improved / regressed;
    |delta| <  noise  -> tie, unless the previous candidate also moved this class below the noise
                         threshold in the same direction (then improved / regressed, "twice in a row").
  * Decision: keep when a targeted class improved and no class regressed (an off-target improvement
    with nothing regressed is kept too); split-recommended when a targeted class improved while another
    regressed; otherwise discard (regression if a class regressed, else tie).
  * Time basis: the profiler's GPU time per config when both the best and the candidate have it
    for every config of a class (the script's CUDA-event median otherwise). Both deltas are
    recorded. A keep needs both clocks: a class is improved only if the deciding clock improved
    and the script's median did not regress beyond noise; when the two clocks point in opposite
    directions beyond noise the class is "disputed", and a version with a disputed class is not
    kept (work moved to the host or into gaps shortens the GPU time while the call gets slower;
    a faster script timer with a slower GPU kernel is not kept either). ``override`` in the
    version's metadata (decision and reason, written by a person) settles a disputed version by
    hand, recorded as such; it has no effect on any other decision.
  * Counter: a regression adds 1; keep, tie, split and failures reset it. Stop after N in a row,
    or when the best version reaches the roofline target on every class ("target reached"), or
    when the GPU gate found no idle GPU within its limit.
  * Masked versions are out of the fold (decision "masked", state unchanged).
  * Timings that are not evidence (the CPU interpreter's): the verdicts are made and labelled,
    and the best can move (so reports have one), but the regression counter, the recent
    regressions, "twice in a row" and the stop flags are left as they were.
  * Repairs (repair_of: vK) of an incorrect proposal: up to 3; a failed repair counts against the
    proposal (abandoned after 3) and never moves the regression counter; a passing repair is
    compared like any candidate (its regression does not count either). A repair_of that names a
    version which was not incorrect or failed is refused ("invalid-repair").
  * Dispatch (split) versions target the classes they route to a kernel other than the best's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

RECENT = 5


@dataclass
class Candidate:
    version: str
    status: str  # "ok" | "incorrect" | "failed"
    reason: str | None = None
    medians: dict[str, float] = field(default_factory=dict)  # config key -> µs
    class_of: dict[str, str] = field(default_factory=dict)  # config key -> config class
    target_classes: list[str] | None = None  # None = all
    hypothesis: str = ""
    files: list[str] = field(default_factory=list)
    gpu_us: dict[str, float] = field(default_factory=dict)  # config key -> profiler GPU µs (may be empty)
    target_reached: dict[str, bool] | None = None  # config class -> roofline target reached
    repair_of: str | None = None  # this version repairs the incorrect proposal named here
    masked: bool = False  # out of the fold
    routes: dict[str, str] | None = None  # dispatch: config key -> the version serving it
    gate_timeout: bool = False  # no idle GPU within the gate's limit: nothing was run
    override: dict | None = None  # {"decision": keep|discard, "reason": ...}: settles a disputed version by hand
    evidence: bool = True  # False: CPU-interpreter timings, which decide nothing that lasts


MAX_REPAIRS = 3


DISAGREE_PTS = 5.0


@dataclass
class Params:
    noise_pct: float = 1.0
    max_consecutive_regressions: int = 5
    # a sub-noise change counts toward "twice in a row" only from this size on (the measured
    # rerun spread): without it +0.01% then +0.02% would make a regression
    trend_floor_pct: float = 0.0
    # a class this many times faster than the best so far is flagged for review (KernelBench's
    # excessive-speedup check): result reuse or skipped work can hide under the physical limit
    review_speedup: float = 10.0


def initial_state() -> dict:
    return {
        "best": None,
        "consecutive_regressions": 0,
        "recent_regressions": [],
        "last_small_direction": {},
        "stop": False,
        "stop_reason": None,
        "repairs": {},  # proposal -> failed repair attempts
        "abandoned": [],  # proposals whose repairs all failed
        "masked": [],
        "broken": [],  # versions that were incorrect or failed: what a repair may name
    }


def geomean(xs) -> float:
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def _classes(c: Candidate) -> list[str]:
    seen: dict[str, None] = {}
    for k in c.medians:
        seen.setdefault(c.class_of[k], None)
    return list(seen)


def decide(state: dict, cand: Candidate, params: Params) -> tuple[dict, dict]:
    """Return (comparison, new state). ``state`` is not modified."""
    state = {**initial_state(), **state}
    st = {
        **state,
        "recent_regressions": list(state["recent_regressions"]),
        "repairs": dict(state["repairs"]),
        "abandoned": list(state["abandoned"]),
        "masked": list(state["masked"]),
        "broken": list(state["broken"]),
    }
    best = state["best"]
    comp = {
        "version": cand.version,
        "best_before": best["version"] if best else None,
        "per_config": [],
        "per_class": [],
        "noise_pct": params.noise_pct,
    }

    if cand.masked:
        comp.update(decision="masked", reason="masked", detail="masked: true in its metadata; out of the fold")
        st["masked"].append(cand.version)
        return _finish(comp, st, params)

    if cand.gate_timeout:
        comp.update(decision="discard", reason="failed", detail=cand.reason)
        st["gate_timeout"] = cand.reason
        return _finish(comp, st, params)

    if cand.repair_of and cand.repair_of not in st["broken"]:
        comp.update(
            repair_of=cand.repair_of,
            decision="discard",
            reason="invalid-repair",
            detail=f"repair_of: {cand.repair_of} was not incorrect or failed, so there is nothing to repair; "
            "a new idea names its parent: instead",
        )
        return _finish(comp, st, params)

    if cand.repair_of:
        comp["repair_of"] = cand.repair_of
        tried = st["repairs"].get(cand.repair_of, 0)
        if cand.repair_of in st["abandoned"] or tried >= MAX_REPAIRS:
            comp.update(
                decision="discard",
                reason="repair-limit",
                detail=f"{cand.repair_of} was abandoned after {MAX_REPAIRS} failed repairs; this repair is not evaluated",
            )
            return _finish(comp, st, params)
        if cand.status != "ok":
            tried += 1
            st["repairs"][cand.repair_of] = tried
            why = "incorrect" if cand.status == "incorrect" else "failed"
            left = MAX_REPAIRS - tried
            detail = f"repair {tried} of {MAX_REPAIRS} of {cand.repair_of} failed: {cand.reason}"
            if left == 0:
                st["abandoned"].append(cand.repair_of)
                detail += f"; {cand.repair_of} is abandoned"
            comp.update(decision="discard", reason=why, detail=detail)
            st["broken"].append(cand.version)
            return _finish(comp, st, params)  # repairs do not move the regression counter

    if cand.status != "ok":
        why = "incorrect" if cand.status == "incorrect" else "failed"
        comp.update(decision="discard", reason=why, detail=cand.reason)
        st["broken"].append(cand.version)
        st.update(consecutive_regressions=0, last_small_direction={})
        return _finish(comp, st, params)

    if cand.routes is not None and best is not None:
        # a split: it targets the classes it sends to a kernel other than the best's
        new_classes = sorted({cand.class_of[k] for k, use in cand.routes.items() if use != best["version"]})
        cand = Candidate(**{**cand.__dict__, "target_classes": new_classes or None})
        comp["dispatch"] = {"routes": cand.routes, "new_kernel_classes": new_classes}

    if best is None:
        comp.update(decision="baseline", reason="baseline", detail="first correct version")
        st.update(best=_best_of(cand), consecutive_regressions=0, last_small_direction={})
        if not cand.evidence:
            comp["evidence"] = NOT_EVIDENCE
        return _finish(comp, st, params)

    missing = sorted(set(best["medians"]) ^ set(cand.medians))
    if missing:
        comp.update(decision="discard", reason="failed", detail=f"configs differ from the best's: {missing}")
        st.update(consecutive_regressions=0, last_small_direction={})
        return _finish(comp, st, params)

    best_gpu = best.get("gpu_us") or {}
    for key, m in cand.medians.items():
        b = best["medians"][key]
        row = {"key": key, "class": cand.class_of[key], "best_us": b, "candidate_us": m, "delta_pct": (m / b - 1) * 100}
        bg, cg = best_gpu.get(key), cand.gpu_us.get(key)
        row.update(
            best_gpu_us=bg,
            candidate_gpu_us=cg,
            gpu_delta_pct=(cg / bg - 1) * 100 if bg and cg else None,
            timers_differ_pct=(cg / m - 1) * 100 if cg else None,
        )
        comp["per_config"].append(row)

    last = state["last_small_direction"]
    new_last: dict[str, int] = {}
    verdicts: dict[str, str] = {}
    for cls in _classes(cand):
        keys = [k for k in cand.medians if cand.class_of[k] == cls]
        row, small = _class_row(cls, keys, cand, best, last.get(cls), params)
        if small is not None:
            new_last[cls] = small
        verdicts[cls] = row["verdict"]
        speedup = 100.0 / (100.0 + row["delta_pct"])
        if speedup > params.review_speedup:
            comp.setdefault("review", []).append(
                f"{cls}: {speedup:.1f}x faster than {best['version']} (over {params.review_speedup:g}x): check for "
                "result reuse or skipped work before trusting it"
            )
        comp["per_class"].append(row)
    st["last_small_direction"] = new_last

    targeted = set(verdicts) if cand.target_classes is None else set(cand.target_classes) & set(verdicts)
    improved = [c for c, v in verdicts.items() if v == "improved"]
    regressed = [c for c, v in verdicts.items() if v == "regressed"]
    t_improved = [c for c in improved if c in targeted]
    disputed = [c for c, v in verdicts.items() if v == "disputed"]

    if disputed:
        _disputed(comp, st, cand, disputed)
    elif t_improved and regressed and cand.routes is not None:
        # already a split: a class it routes elsewhere got slower, so it is not kept
        comp.update(decision="discard", reason="regression", detail=f"improves {t_improved} but regresses {regressed}")
        st["consecutive_regressions"] = state["consecutive_regressions"] + 1
    elif t_improved and regressed:
        comp.update(
            decision="split-recommended",
            reason="improved and regressed classes",
            detail=f"improves {t_improved} but regresses {regressed}: keep {best['version']} for "
            f"{regressed} and dispatch {t_improved} to {cand.version}",
            split={
                "improved": t_improved,
                "regressed": regressed,
                "dispatch": [{"when": _when(t_improved), "use": cand.version}, {"use": best["version"]}],
            },
        )
        st["consecutive_regressions"] = 0
    elif improved and not regressed:
        off = [c for c in improved if c not in targeted]
        detail = f"improved {improved}" + (f" (outside the target: {off})" if off else "")
        comp.update(decision="keep", reason="improved", detail=detail)
        st.update(best=_best_of(cand), consecutive_regressions=0)
    elif regressed:
        comp.update(decision="discard", reason="regression", detail=f"regressed {regressed}")
        # repairs do not count as regressions
        st["consecutive_regressions"] = state["consecutive_regressions"] + (0 if cand.repair_of else 1)
        worst = max((r for r in comp["per_class"] if r["verdict"] == "regressed"), key=lambda r: r["delta_pct"])
        st["recent_regressions"] = (
            st["recent_regressions"]
            + [
                {
                    "version": cand.version,
                    "hypothesis": cand.hypothesis,
                    "files": cand.files,
                    "best": best["version"],
                    "class": worst["class"],
                    "best_us": worst["best_us"],
                    "candidate_us": worst["candidate_us"],
                    "best_gpu_us": worst["best_gpu_us"],
                    "candidate_gpu_us": worst["candidate_gpu_us"],
                    "basis": worst["basis"],
                    "delta_pct": worst["delta_pct"],
                }
            ]
        )[-RECENT:]
    else:
        comp.update(decision="discard", reason="tie", detail=f"every class within {params.noise_pct:g}% noise")
        st["consecutive_regressions"] = 0
    if cand.override and not disputed:
        comp["override_ignored"] = "override: settles only a disputed version; the clocks agreed on this one"
    if not cand.evidence:
        _not_evidence(comp, st, state)
    return _finish(comp, st, params)


NOT_EVIDENCE = "cpu-interpreter: timings are not evidence; this verdict moves no counter and stops nothing"


def _not_evidence(comp: dict, st: dict, state: dict) -> None:
    """A verdict from CPU-interpreter timings: labelled, and the loop's counters left as they were."""
    comp["evidence"] = NOT_EVIDENCE
    for k in ("consecutive_regressions", "recent_regressions", "last_small_direction"):
        st[k] = state[k]


def _disputed(comp: dict, st: dict, cand: Candidate, disputed: list[str]) -> None:
    """Not kept while its clocks disagree, unless a person settled it (``override``), recorded as such."""
    st["consecutive_regressions"] = 0
    detail = f"the profiler's GPU time and the script's timer point in opposite directions on {disputed}"
    ov = cand.override
    if not ov:
        comp.update(decision="discard", reason="disputed", detail=detail + ": not kept without both clocks")
        return
    comp.update(decision=ov["decision"], reason="override", detail=f"{detail}; settled by hand: {ov['reason']}")
    comp["override"] = {"decision": ov["decision"], "reason": ov["reason"], "disputed": disputed}
    if ov["decision"] == "keep":
        st["best"] = _best_of(cand)


def _value(text: str):
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


def _when(classes: list[str]) -> dict:
    """The `when:` of a dispatch entry for these config classes ("N=256" -> {N: [256]}); a class
    keyed on several columns gives the values of each (review it when the classes mix)."""
    when: dict[str, list] = {}
    for cls in classes:
        if "=" not in cls:  # not a "col=value" class name: name the class itself
            when.setdefault("config_class", []).append(cls)
            continue
        for part in cls.split(","):
            col, _, val = part.partition("=")
            v = _value(val)
            if v not in when.setdefault(col, []):
                when[col].append(v)
    return when


def _class_row(cls: str, keys: list[str], cand: Candidate, best: dict, last_dir: int | None, params: Params) -> tuple[dict, int | None]:
    """One class's deltas on both clocks and its verdict; also the sub-noise direction to remember
    for "twice in a row" (None when there is none)."""
    best_gpu = best.get("gpu_us") or {}
    script_delta = (geomean(cand.medians[k] / best["medians"][k] for k in keys) - 1) * 100
    use_gpu = all(best_gpu.get(k) and cand.gpu_us.get(k) for k in keys)
    gpu_delta = (geomean(cand.gpu_us[k] / best_gpu[k] for k in keys) - 1) * 100 if use_gpu else None
    delta = gpu_delta if use_gpu else script_delta
    direction, note, small = _sign(delta), None, None
    if abs(delta) >= params.noise_pct:
        verdict = "improved" if delta < 0 else "regressed"
    elif abs(delta) < params.trend_floor_pct:
        verdict = "tie"
        note = f"under the {params.trend_floor_pct:g}% trend floor: does not count toward twice in a row"
    elif direction != 0 and last_dir == direction:
        verdict = "improved" if delta < 0 else "regressed"
        note = f"below the {params.noise_pct:g}% noise threshold, but the same direction twice in a row"
    else:
        verdict, small = "tie", direction
    clocks = None
    if use_gpu:
        s_verdict = _plain_verdict(script_delta, params.noise_pct)
        clocks = {"gpu_time": verdict, "script": s_verdict}
        if {verdict, s_verdict} == {"improved", "regressed"}:
            verdict, small = "disputed", None
            note = (
                f"disputed: the profiler's GPU time says {gpu_delta:+.2f}% ({clocks['gpu_time']}) but the script's "
                f"timer {script_delta:+.2f}% ({s_verdict}); a keep needs both clocks (settle it by hand with "
                "override: in the version's metadata)"
            )
    disagreement = _disagreement(keys, cand, script_delta, gpu_delta, params)
    if disagreement and use_gpu and verdict != "disputed":
        disagreement += "; the GPU time decides"
    row = {
        "class": cls,
        "best_us": geomean(best["medians"][k] for k in keys),
        "candidate_us": geomean(cand.medians[k] for k in keys),
        "best_gpu_us": geomean(best_gpu[k] for k in keys) if use_gpu else None,
        "candidate_gpu_us": geomean(cand.gpu_us[k] for k in keys) if use_gpu else None,
        "script_delta_pct": script_delta,
        "gpu_delta_pct": gpu_delta,
        "basis": "profiler" if use_gpu else "script",
        "delta_pct": delta,
        "clocks": clocks,
        "verdict": verdict,
        "targeted": cand.target_classes is None or cls in cand.target_classes,
        "note": note,
        "disagreement": disagreement,
    }
    return row, small


def _disagreement(keys: list[str], cand: Candidate, script_delta: float, gpu_delta: float | None, params: Params) -> str | None:
    """Where the two clocks tell different stories (per config, or per class), in words."""
    out: list[str] = []
    if gpu_delta is not None:
        s_verdict, g_verdict = _plain_verdict(script_delta, params.noise_pct), _plain_verdict(gpu_delta, params.noise_pct)
        if s_verdict != g_verdict or abs(script_delta - gpu_delta) > DISAGREE_PTS:
            out.append(f"the script's timer says {script_delta:+.2f}% ({s_verdict}) but the profiler's GPU time {gpu_delta:+.2f}% ({g_verdict})")
    differ = [k for k in keys if cand.gpu_us.get(k) and abs(cand.gpu_us[k] / cand.medians[k] - 1) * 100 > DISAGREE_PTS]
    if differ:
        out.append(f"the profiler's GPU time and the script's median differ by more than {DISAGREE_PTS:g}% on {differ}")
    return "; ".join(out) or None


def _plain_verdict(delta: float, noise: float) -> str:
    return "tie" if abs(delta) < noise else ("improved" if delta < 0 else "regressed")


def _best_of(c: Candidate) -> dict:
    return {
        "version": c.version,
        "medians": dict(c.medians),
        "gpu_us": dict(c.gpu_us),
        "target_reached": dict(c.target_reached) if c.target_reached is not None else None,
    }


def _finish(comp: dict, st: dict, params: Params) -> tuple[dict, dict]:
    n = st["consecutive_regressions"]
    reached = (st["best"] or {}).get("target_reached")
    if st.get("gate_timeout"):
        st.update(stop=True, stop_reason=f"no idle GPU within the gate's limit ({st['gate_timeout']})")
    elif n >= params.max_consecutive_regressions:
        st.update(stop=True, stop_reason=f"{n} consecutive regressions")
    elif reached and all(reached.values()):
        st.update(
            stop=True,
            stop_reason=f"target reached: {st['best']['version']} is at the roofline target on every class",
        )
    else:
        st.update(stop=False, stop_reason=None)
    comp["best_after"] = st["best"]["version"] if st["best"] else None
    comp["state"] = st
    return comp, st


def fold(candidates: list[Candidate], params: Params) -> tuple[list[dict], dict]:
    """Decide a whole sequence (what the graph's compare chain computes one link at a time)."""
    state, out = initial_state(), []
    for c in candidates:
        comp, state = decide(state, c, params)
        out.append(comp)
    return out, state
