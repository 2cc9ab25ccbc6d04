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
  * Time basis: the GPU time per config when both the best and the candidate have it on the same
    clock for every config of a class (the script's CUDA-event median otherwise): Nsight
    Compute's, read outside the kernel's process (clock "ncu"), else torch.profiler's, recorded in
    it ("in-process"). Both deltas are recorded. A keep needs both clocks: a class is improved
    only if the deciding clock improved and the script's median did not regress beyond noise;
    when the two clocks point in opposite directions beyond noise the class is "disputed", and a
    version with a disputed class is not kept (work moved to the host or into gaps shortens the
    GPU time while the call gets slower; a faster script timer with a slower GPU kernel is not
    kept either). ``override`` in the version's metadata (decision and reason, written by a
    person) settles a disputed version by hand, recorded as such and labelled ``untrusted``
    (nothing tells who wrote the file); it has no effect on any other decision. A keep that rests
    on a class not decided on Nsight Compute's clock is labelled ``untrusted``: the kernel's
    process could have written its times; so is every keep of a command target (its CSV) and
    every keep judged on a fixed ``inputs.seed`` (answers computed ahead would pass).
  * Unseen work: Nsight Compute times kernels only, and a kernel can tell the processes it wraps.
    What bounds the rest is the judge's own clock per call around batches of back-to-back calls in
    the timing process (``bound``: bound_us and its standard error, kopt.measure.bound), which
    holds every call's whole work wherever it ran. Per config of a class whose GPU time improved,
    the unseen time's change ``du`` = (bound change) - (GPU time change) must be within the
    class's noise threshold of the best's GPU time, plus ``bound_share`` of the GPU time's fall,
    plus LAUNCH_GAP_US per launch added (the gaps between back-to-back launches), with
    ``noise_se_z`` standard errors of ``du`` to spare, against the least unseen time of the
    baseline and every keep (with the fall since the baseline) and against the best's own (with
    the fall since the best), the worse standing: then
    the class stands; ``du`` beyond that by as much is "disputed" (work moved where Nsight Compute
    does not look, with where the time went: host CPU time in the process it wrapped, or copies
    and other contexts); anything between is "unresolved" (the bound does not resolve the
    threshold on this machine, with the numbers), as is a candidate whose calls are host-bound
    (the batch then times the host, not the GPU). Neither is kept. Where only noise leaves configs
    unresolved, the class's configs together decide (``du`` and the allowances summed, the
    standard errors in quadrature): the verdict is the class's. So a version with no real gain
    can claim at most the noise threshold over (1 - bound_share), whatever it moved, and one with a
    real gain g at most bound_share / (1 - bound_share) of g more (two thirds, at 0.4).
  * Counter: a regression adds 1; keep, tie, split and failures reset it. Stop after N in a row,
    or when the GPU gate found no idle GPU within its limit. (The stop at the roofline target
    reads the best's profile, which follows the decision: kopt.loop.state.target_stop.)
  * Masked versions are out of the fold (decision "masked", state unchanged).
  * Timings that are not evidence (the CPU's): the regression counter, the recent regressions,
    "twice in a row" and the stop flags are left as they were. The Triton interpreter's decide
    nothing at all: every class is a tie (its deltas recorded, labelled), so nothing is kept, split
    or regressed on them; the first correct version is still the baseline, so the reports have one.
    (A command target's own benchmark on the CPU still decides, labelled.)
  * Repairs (repair_of: vK) of an incorrect proposal: up to 3; a failed repair counts against the
    proposal (abandoned after 3) and never moves the regression counter; a passing repair is
    compared like any candidate (its regression does not count either) and closes its proposal, so
    a second one is refused. A repair_of that names a version which was not incorrect or failed, or
    a repair rather than the proposal, is refused ("invalid-repair"); a refused repair counts as a
    regression.
  * Dispatch (split) versions target the classes they route to a kernel other than the best's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

RECENT = 5  # regressions kept in the state for the next proposal to read

MAX_REPAIRS = 3

DISAGREE_PTS = 5.0

# The unseen time a version may add per launch it adds: the GPU's gap between back-to-back launches
# of one stream (module docstring). An added launch costs more than this on Nsight Compute's clock
# (about 3 us for the shortest launch on the H100), so launches bought for the allowance lose time.
LAUNCH_GAP_US = 2.0
# Host CPU time per call in the process Nsight Compute wrapped, over the best's, that says "host work".
# The CPU time is read in clock ticks of 10 ms over the clock's 7 timed calls: one tick is 1.43 ms a
# call, and an honest process reads one tick more or less from run to run (a copies attack was said
# to be "the host" at +1.43 ms on the H100, at +4.29 ms on the H200); seven ticks. The host attacks
# read +160 to +215 ms a call (H100, H200).
HOST_CPU_US = 10000.0

UNTRUSTED = (
    "untrusted: the clock that decided was read in the kernel's own process (no Nsight Compute record), "
    "which could have written its times"
)

OVERRIDDEN = (
    "untrusted: settled by hand (override: in the version's metadata) where the judge's clocks disagreed or its "
    "bound did not resolve: whoever wrote that file decided, not a measurement"
)

SELF_REPORTED = (
    "untrusted: a command target's outputs are checked, and its times taken, by the commit's own benchmark "
    "command (its CSV), which could have written them; kopt does not yet confine that command"
)

PREDICTABLE = (
    "untrusted: judged on a fixed inputs.seed, an input schedule the kernel can compute ahead (a replay of "
    "answers made at import passes); inputs.seed: null draws fresh seeds"
)

NOT_EVIDENCE = "cpu-interpreter: timings are not evidence; this verdict moves no counter and stops nothing"


@dataclass
class Candidate:
    """One version's summary: what the fold needs to know about it."""

    version: str
    status: str  # "ok" | "incorrect" | "failed" | "unsupported" (needs a GPU this machine lacks)
    reason: str | None = None
    medians: dict[str, float] = field(default_factory=dict)  # config key -> µs
    class_of: dict[str, str] = field(default_factory=dict)  # config key -> config class
    target_classes: list[str] | None = None  # None = all
    hypothesis: str = ""
    files: list[str] = field(default_factory=list)
    gpu_us: dict[str, float] = field(default_factory=dict)  # config key -> profiler GPU µs (may be empty)
    repair_of: str | None = None  # this version repairs the incorrect proposal named here
    masked: bool = False  # out of the fold
    routes: dict[str, str] | None = None  # dispatch: config key -> the version serving it
    gate_timeout: bool = False  # no idle GPU within the gate's limit: nothing was run
    override: dict | None = None  # {"decision": keep|discard, "reason": ...}: settles a disputed version by hand
    self_reported: bool = False  # a command target: its checks and times are its own command's CSV
    predictable: bool = False  # judged on a fixed inputs.seed (correctness.json's settings)
    evidence: bool = True  # False: CPU timings (the interpreter's, a command's), which move no counter
    interpreter: bool = False  # the Triton interpreter's timings: every class a tie (they decide nothing)
    clock: str = "in-process"  # gpu_us's: ncu (outside the kernel's process), in-process; judge: the CPU's
    gpu_se: dict[str, float] = field(default_factory=dict)  # config key -> gpu_us's standard error (ncu's calls)
    gpu_n: dict[str, float] = field(default_factory=dict)  # config key -> the calls behind gpu_se
    machine: str | None = None  # the GPU and machine start that clocked it (kopt.measure.environment.machine)
    launches: dict[str, float] = field(default_factory=dict)  # config key -> launches per call (ncu's record)
    # what bounds unseen work and says where it went (bench.csv's columns bound_us, bound_se_us, bound_host_us,
    # clock_cpu_us, clock_wall_us): column -> config key -> value
    bound: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass(kw_only=True)
class Params:
    """The decision's settings (results/settings/decide.json; ``from_settings``)."""

    noise_pct: float = 1.0
    # a class's change under this many µs per call is a tie too (its threshold is the larger of the
    # two): the clock's resolution on launches of a few µs (config.yaml)
    noise_floor_us: float = 0.25
    # ... and under this many standard errors of the class's delta, where Nsight Compute's calls give
    # one (kopt.measure.outside_clock.standard_error): what two processes of one kernel read apart
    noise_se_z: float = 3.0
    # the unseen time a class may add, as a share of its GPU time's fall, on top of the noise threshold:
    # one standard error of the judge's bound is 0.03-1.8 us a call on the H100, but honest faster kernels
    # show unseen time of their own back to back (up to +139 us of a 2 ms GEMM): more than the 1% the noise rule
    # asks, so an honest gain needs room beyond it (module docstring; docs/threat_model.md)
    bound_share: float = 0.4
    max_consecutive_regressions: int = 5
    # the threshold (%) where the best was clocked on another GPU or machine start than the candidate:
    # one identical softmax read up to 2.8% apart on Nsight Compute between five H100 machine starts, 0.1-1.7%
    # between runs of one (docs/runs/h100-bound/fresh-12..16; _across_machines)
    machine_spread_pct: float = 3.0
    # a sub-noise change counts toward "twice in a row" only from this size on (the measured
    # rerun spread): without it +0.01% then +0.02% would make a regression
    trend_floor_pct: float = 0.0
    # a class this many times faster than the best so far is flagged for review (KernelBench's
    # excessive-speedup check): result reuse or skipped work can hide under the physical limit
    review_speedup: float = 10.0


def from_settings(settings: dict) -> Params:
    """The decision's settings file (kopt.workspace.settings: rule `compare`'s ``decide``) as Params,
    by name; a name Params does not have is an error, not dropped."""
    return Params(**settings)


def initial_state() -> dict:
    """The state before the first version: no best, nothing counted."""
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
    """The geometric mean of positive numbers."""
    xs = list(xs)
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def fold(candidates: list[Candidate], params: Params) -> tuple[list[dict], dict]:
    """Decide a whole sequence (what the graph's compare chain computes one link at a time)."""
    state, out = initial_state(), []
    for c in candidates:
        comp, state = decide(state, c, params)
        out.append(comp)
    return out, state


def decide(state: dict, cand: Candidate, params: Params) -> tuple[dict, dict]:
    """Return (comparison, new state). ``state`` is not modified."""
    step = _start(state, cand, params)
    if not _precheck(step):
        _compare_with_best(step)
    return _finish(step)


# --- the record one decision works on -----------------------------------------------------------


@dataclass
class _Step:
    """One decision in the making: its inputs, the state before it, and the comparison and new state it builds."""

    cand: Candidate  # a dispatch version: a copy with its target classes filled in (_target_routed_classes)
    params: Params
    before: dict  # the state after the previous version, defaults filled in; never modified
    state: dict  # the new state: `before` with the lists it may change copied
    comp: dict  # the comparison (compare.json), key order as written

    @property
    def best(self) -> dict | None:
        """The best version so far (before this one)."""
        return self.before["best"]


def _start(state: dict, cand: Candidate, params: Params) -> _Step:
    """The step's record: the state before with its defaults, a new state and an empty comparison."""
    before = {**initial_state(), **state}
    new = {
        **before,
        "recent_regressions": list(before["recent_regressions"]),
        "repairs": dict(before["repairs"]),
        "abandoned": list(before["abandoned"]),
        "masked": list(before["masked"]),
        "broken": list(before["broken"]),
    }
    best = before["best"]
    comp = {
        "version": cand.version,
        "best_before": best["version"] if best else None,
        "per_config": [],
        "per_class": [],
        "noise_pct": params.noise_pct,
        "clock": cand.clock,
    }
    return _Step(cand, params, before, new, comp)


def _finish(step: _Step) -> tuple[dict, dict]:
    """Set the stop flag, then close the comparison with the best after it and the new state."""
    comp, st = step.comp, step.state
    st.update(_stop(st, step.params))
    comp["best_after"] = st["best"]["version"] if st["best"] else None
    comp["state"] = st
    return comp, st


def _stop(st: dict, params: Params) -> dict:
    """Whether the loop stops after this state, and why: the GPU gate, the regression counter."""
    n = st["consecutive_regressions"]
    if st.get("gate_timeout"):
        return {"stop": True, "stop_reason": f"no idle GPU within the gate's limit ({st['gate_timeout']})"}
    if n >= params.max_consecutive_regressions:
        return {"stop": True, "stop_reason": f"{n} consecutive regressions"}
    return {"stop": False, "stop_reason": None}


# --- the precheck: decisions made before any timing is compared ---------------------------------


def _precheck(step: _Step) -> bool:
    """The exits before timings are compared, in order; True when one of them decided."""
    exits = (_masked, _unsupported, _gate_timed_out, _repair, _not_correct, _baseline)
    return any(decided(step) for decided in exits)


def _masked(step: _Step) -> bool:
    """A masked version is out of the fold: recorded as masked, nothing else changes."""
    if not step.cand.masked:
        return False
    step.comp.update(decision="masked", reason="masked", detail="masked: true in its metadata; out of the fold")
    step.state["masked"].append(step.cand.version)
    return True


def _unsupported(step: _Step) -> bool:
    """A version this machine cannot run (a CUDA kernel without a GPU): skipped, nothing counted."""
    if step.cand.status != "unsupported":
        return False
    step.comp.update(decision="skipped", reason="needs-gpu", detail=step.cand.reason)
    return True


def _gate_timed_out(step: _Step) -> bool:
    """No idle GPU within the gate's limit: nothing ran, and the loop stops."""
    if not step.cand.gate_timeout:
        return False
    step.comp.update(decision="discard", reason="failed", detail=step.cand.reason)
    step.state["gate_timeout"] = step.cand.reason
    return True


def _repair(step: _Step) -> bool:
    """A repair (repair_of: vK): refused unless vK broke and is not abandoned; a failed one counts against vK."""
    cand, comp, st = step.cand, step.comp, step.state
    if not cand.repair_of:
        return False
    comp["repair_of"] = cand.repair_of
    if cand.repair_of not in st["broken"]:
        detail = (
            f"repair_of: {cand.repair_of} is no broken proposal (it was correct, a repair of one, or a passing "
            "repair of it was judged already), so there is nothing to repair; a new idea names its parent: instead"
        )
        _refused_repair(step, "invalid-repair", detail)
        return True
    tried = st["repairs"].get(cand.repair_of, 0)
    if cand.repair_of in st["abandoned"] or tried >= MAX_REPAIRS:
        detail = f"{cand.repair_of} was abandoned after {MAX_REPAIRS} failed repairs; this repair is not evaluated"
        _refused_repair(step, "repair-limit", detail)
        return True
    if cand.status == "ok":  # compared like any candidate; the proposal is repaired: no second passing repair
        st["broken"].remove(cand.repair_of)  # (its regression does not count: repairs were unlimited so)
        return False
    _failed_repair(step, tried + 1)
    return True


def _refused_repair(step: _Step, reason: str, detail: str) -> None:
    """A repair refused unjudged: discarded, and counted as a regression is (a version that moves
    the loop no closer; refused repairs of one proposal, twenty in a row, never stopped it)."""
    step.comp.update(decision="discard", reason=reason, detail=detail)
    step.state["consecutive_regressions"] = step.before["consecutive_regressions"] + 1


def _failed_repair(step: _Step, tried: int) -> None:
    """Count a failed repair against its proposal (abandoned at MAX_REPAIRS); the regression counter stays."""
    cand, st = step.cand, step.state
    st["repairs"][cand.repair_of] = tried
    detail = f"repair {tried} of {MAX_REPAIRS} of {cand.repair_of} failed: {cand.reason}"
    if tried == MAX_REPAIRS:
        st["abandoned"].append(cand.repair_of)
        detail += f"; {cand.repair_of} is abandoned"
    step.comp.update(decision="discard", reason=_failure(cand), detail=detail)
    # not broken itself: the next repair names the proposal (a repair of a failed repair was charged
    # to a fresh proposal, three attempts each, none ever abandoned)


def _not_correct(step: _Step) -> bool:
    """An incorrect or failed version is never kept; it resets the counter and "twice in a row"."""
    cand = step.cand
    if cand.status == "ok":
        return False
    step.comp.update(decision="discard", reason=_failure(cand), detail=cand.reason)
    step.state["broken"].append(cand.version)
    step.state.update(consecutive_regressions=0, last_small_direction={})
    return True


def _failure(cand: Candidate) -> str:
    """The reason a version that is not ok gives: incorrect or failed."""
    return "incorrect" if cand.status == "incorrect" else "failed"


def _baseline(step: _Step) -> bool:
    """With no best yet, the first correct version is the baseline."""
    if step.best is not None:
        return False
    step.comp.update(decision="baseline", reason="baseline", detail="first correct version")
    step.state.update(best=_best_of(step.cand), consecutive_regressions=0, last_small_direction={})
    if not step.cand.evidence:
        step.comp["evidence"] = NOT_EVIDENCE
    return True


# --- the comparison with the best: per config, per class, then the decision -------------------


def _compare_with_best(step: _Step) -> None:
    """A correct version against the best: one row per config, a verdict per class, then the decision."""
    _target_routed_classes(step)
    if _configs_differ(step):
        return
    _config_rows(step)
    _decide_on_verdicts(step, _class_verdicts(step))


def _target_routed_classes(step: _Step) -> None:
    """A dispatch (split) version targets the classes it routes to a kernel other than the best's."""
    cand = step.cand
    if cand.routes is None:
        return
    new_classes = sorted({cand.class_of[k] for k, use in cand.routes.items() if use != step.best["version"]})
    step.cand = Candidate(**{**cand.__dict__, "target_classes": new_classes or None})
    step.comp["dispatch"] = {"routes": step.cand.routes, "new_kernel_classes": new_classes}


def _configs_differ(step: _Step) -> bool:
    """A version measured on other configs than the best's cannot be compared: failed."""
    missing = sorted(set(step.best["medians"]) ^ set(step.cand.medians))
    if not missing:
        return False
    step.comp.update(decision="discard", reason="failed", detail=f"configs differ from the best's: {missing}")
    step.state.update(consecutive_regressions=0, last_small_direction={})
    return True


def _config_rows(step: _Step) -> None:
    """One comparison row per config: the script's median and the profiler's GPU time, each against the best's."""
    cand, best = step.cand, step.best
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
        step.comp["per_config"].append(row)


def _class_verdicts(step: _Step) -> dict[str, str]:
    """One row per config class (deltas and verdict), remembering sub-noise directions; class -> verdict."""
    cand, last = step.cand, step.before["last_small_direction"]
    new_last: dict[str, int] = {}
    verdicts: dict[str, str] = {}
    for cls in _classes(cand):
        keys = [k for k in cand.medians if cand.class_of[k] == cls]
        row, small = _class_row(cls, keys, cand, step.best, last.get(cls), step.params)
        if small is not None:
            new_last[cls] = small
        verdicts[cls] = row["verdict"]
        _flag_for_review(step, row)
        step.comp["per_class"].append(row)
    step.state["last_small_direction"] = new_last
    return verdicts


def _classes(c: Candidate) -> list[str]:
    """The candidate's config classes, in the order of its configs."""
    seen: dict[str, None] = {}
    for k in c.medians:
        seen.setdefault(c.class_of[k], None)
    return list(seen)


def _flag_for_review(step: _Step, row: dict) -> None:
    """Flag a class that is implausibly faster than the best (KernelBench's excessive-speedup check)."""
    params = step.params
    speedup = 100.0 / (100.0 + row["delta_pct"])
    if speedup > params.review_speedup:
        step.comp.setdefault("review", []).append(
            f"{row['class']}: {speedup:.1f}x faster than {step.best['version']} (over {params.review_speedup:g}x): "
            "check for result reuse or skipped work before trusting it"
        )


# --- one class: deltas on both clocks and a verdict ---------------------------------------------


def _class_row(
    cls: str, keys: list[str], cand: Candidate, best: dict, last_dir: int | None, params: Params
) -> tuple[dict, int | None]:
    """One class's deltas on both clocks and its verdict; also the sub-noise direction to remember
    for "twice in a row" (None when there is none)."""
    best_gpu = best.get("gpu_us") or {}
    script_delta = (geomean(cand.medians[k] / best["medians"][k] for k in keys) - 1) * 100
    same_clock = best.get("clock", "in-process") == cand.clock
    use_gpu = same_clock and all(best_gpu.get(k) and cand.gpu_us.get(k) for k in keys)
    gpu_delta = (geomean(cand.gpu_us[k] / best_gpu[k] for k in keys) - 1) * 100 if use_gpu else None
    delta = gpu_delta if use_gpu else script_delta
    best_us = geomean(best["medians"][k] for k in keys)
    best_gpu_us = geomean(best_gpu[k] for k in keys) if use_gpu else None
    if use_gpu:
        noise, se_pct = class_noise(
            params, keys, best_gpu, best.get("gpu_se") or {}, cand.gpu_us, cand.gpu_se, best.get("gpu_n"), cand.gpu_n
        )
        noise, machine = _across_machines(noise, best, cand, params)
    else:
        noise, se_pct = class_noise(params, keys, best["medians"], {}, cand.medians, {})
        machine = None
    # a sub-noise direction counts toward twice in a row from half the standard errors the threshold allows
    trend = max(params.trend_floor_pct, params.noise_se_z / 2 * (se_pct or 0.0))
    # the unseen allowance's threshold: the rule's own, never one the candidate's errors or the machines widened
    own = _allowance_noise(params, keys, best, cand) if use_gpu else None
    params = replace(params, noise_pct=noise, trend_floor_pct=trend)
    # across machines a sub-noise direction is the machines' offset, the same for every candidate: never a trend
    verdict, note, small = _noise_verdict(delta, None if machine else last_dir, params)
    small = None if machine else small
    if machine and verdict == "tie":
        note = "; ".join(filter(None, [note, machine["note"]]))
    clocks, unseen, pooled = None, [], None
    if use_gpu:
        clocks, verdict, note, small = _both_clocks(verdict, note, small, script_delta, gpu_delta, params)
        held = replace(params, noise_pct=own)
        unseen = unseen_work(keys, cand, best, held) if clocks["gpu_time"] == "improved" else []
        if verdict == "disputed":  # the GPU time fell, the events rose: where the fall went, per config
            note += "".join(
                f"; {r['key']}: where: {_where(r['key'], cand, best, r['unseen_delta_us'])}" for r in unseen
            )
        else:
            worst, pooled = _worst(unseen, params.noise_se_z)
            if worst != "ok":
                verdict, note, small = worst, _unseen_note(worst, unseen, pooled), None
    if cand.interpreter:  # the interpreter's timings: nothing is kept, split or regressed on them
        verdict, note, small = "tie", "the Triton interpreter's timings decide nothing: a tie", None
    disagreement = _disagreement(keys, cand, script_delta, gpu_delta, params)
    if disagreement and use_gpu and verdict != "disputed":
        disagreement += "; the GPU time decides"
    row = {
        "class": cls,
        "best_us": best_us,
        "candidate_us": geomean(cand.medians[k] for k in keys),
        "best_gpu_us": best_gpu_us,
        "candidate_gpu_us": geomean(cand.gpu_us[k] for k in keys) if use_gpu else None,
        "script_delta_pct": script_delta,
        "gpu_delta_pct": gpu_delta,
        "basis": "profiler" if use_gpu else "script",
        "gpu_clock": cand.clock if use_gpu else None,  # ncu: read outside the kernel's process
        "delta_pct": delta,
        "noise_pct": params.noise_pct,  # this class's threshold (noise_pct, noise_floor_us of its time, or se_pct's z)
        "se_pct": se_pct,  # the delta's standard error on Nsight Compute's clock (%; None: not measured)
        "machine": machine,  # the best clocked on another GPU or machine start: its threshold (_across_machines)
        "clocks": clocks,
        "verdict": verdict,
        "unseen": unseen if use_gpu else None,  # the bound per config (unseen_work), where the GPU time improved
        "unseen_class": pooled if use_gpu else None,  # the class's configs together, where noise left one unresolved
        "targeted": cand.target_classes is None or cls in cand.target_classes,
        "note": note,
        "disagreement": disagreement,
    }
    return row, small


def unseen_work(keys: list[str], cand: Candidate, best: dict, params: Params) -> list[dict]:
    """Per config of a class whose GPU time improved: the change of the unseen time per call (the
    bound's change less the GPU time's), what it may be (the class's noise threshold of the best's
    GPU time, plus ``bound_share`` of the GPU time's fall, plus LAUNCH_GAP_US per launch added),
    its standard error, and the verdict: ok, moved (beyond the allowance by ``noise_se_z``
    standard errors), unresolved (neither, or the candidate's calls host-bound or batched unlike).
    Held twice, and the worse stands: against the least unseen time of the baseline and every
    keep with the fall since the baseline (moved work cannot ratchet keep by keep), and against
    the best's own with the fall since the best (a later version cannot spend the room an earlier
    keep's real gain left: a review kept a GEMM v2 doing v1's work with 51%, 86% or 96% of it
    moved); the worse is the one further over its allowance where both say the same, so a class's
    pooling takes that one. Configs without a bound on both sides are left out."""
    floors, out = best.get("unseen_floor") or {}, []
    for k in keys:
        mine, theirs = unseen(cand, k), unseen_of(best, k)
        floor = floors.get(k) or theirs
        if mine is None or floor is None:
            continue
        since_baseline = (best.get("baseline_gpu") or {}).get(k, best["gpu_us"][k])
        if theirs is not None:  # the candidate's bound no more precise than the best's, relatively: a
            # kernel that pads its calls to a deadline leaves only the judge's own parts in their spread
            mine = {**mine, "se": max(mine["se"], theirs["rel"] * mine["bound"])}
        held = [_held(k, mine, floor, since_baseline, cand, best, params)]
        if theirs is not None:
            held.append(_held(k, mine, theirs, best["gpu_us"][k], cand, best, params))
        row = max(held, key=lambda r: (_SEVERITY[r["verdict"]], r["unseen_delta_us"] - r["allow_us"]))
        row["calls"] = {"mine": mine["calls"], "best": (theirs or floor)["calls"], "floor": floor["calls"]}
        if len(set(row["calls"].values())) > 1 and row["verdict"] == "ok":
            row.update(verdict="unresolved", unresolved_by="batch sizes")  # other sizes share out other costs
        host = (cand.bound.get("bound_host_us") or {}).get(k)
        row["host_bound"] = bool(host is not None and host > cand.gpu_us[k])
        if row["verdict"] != "ok" and row["host_bound"]:
            row.update(verdict="unresolved", unresolved_by="host-bound")  # the batch times the host's launches
        du = row["unseen_delta_us"]
        row["where"] = _where(k, cand, best, du) if row["verdict"] == "moved" else _hint(k, cand, best, du, row)
        out.append(row)
    return out


_SEVERITY = {"ok": 0, "unresolved": 1, "moved": 2}


def _held(k: str, mine: dict, ref: dict, since_us: float, cand: Candidate, best: dict, params: Params) -> dict:
    """The candidate's unseen time on config ``k`` against ``ref``'s (a floor, or the best's), its
    allowance from the GPU time's fall since ``since_us``, and the verdict."""
    dg = cand.gpu_us[k] - best["gpu_us"][k]
    du = mine["us"] - ref["us"]
    se = math.sqrt(mine["se"] ** 2 + (math.inf if ref.get("se") is None else ref["se"]) ** 2)
    fall = max(since_us - cand.gpu_us[k], 0.0)  # as far as it is the candidate's
    threshold = params.noise_pct / 100 * best["gpu_us"][k]
    added = max(0.0, cand.launches.get(k, 0.0) - (best.get("launches") or {}).get(k, 0.0))
    # launches added earn their gaps, at most the threshold: a kernel adds launches under Nsight Compute alone
    allow = threshold + params.bound_share * fall + min(LAUNCH_GAP_US * added, threshold)
    z = params.noise_se_z
    verdict = "ok" if du + z * se <= allow else "moved" if du - z * se > allow else "unresolved"
    row = {"key": k, "gpu_delta_us": dg, "bound_delta_us": du + dg, "unseen_delta_us": du, "se_us": se}
    row.update(allow_us=allow, verdict=verdict, unresolved_by="noise" if verdict == "unresolved" else None)
    return row


def unseen(c: Candidate, k: str) -> dict | None:
    """A version's unseen time per call on config ``k``: the bound less the GPU time, its standard
    error, and the calls per batch; None without a bound (or on another clock than Nsight Compute's)."""
    b = c.bound
    us, se = (b.get("bound_us") or {}).get(k), (b.get("bound_se_us") or {}).get(k)
    if us is None or k not in c.gpu_us:
        return None
    rel = math.inf if se is None else se / us if us > 0 else 0.0  # the bound's relative error
    se = math.inf if se is None else math.sqrt(se**2 + c.gpu_se.get(k, 0.0) ** 2)
    return {"us": us - c.gpu_us[k], "se": se, "calls": (b.get("bound_calls") or {}).get(k), "bound": us, "rel": rel}


def unseen_of(best: dict, k: str) -> dict | None:
    """The same of the best, from the state's record of it."""
    c = Candidate(best["version"], "ok", gpu_us=best.get("gpu_us") or {}, gpu_se=best.get("gpu_se") or {})
    c.bound = best.get("bound") or {}
    return unseen(c, k)


def _worst(rows: list[dict], z: float) -> tuple[str, dict | None]:
    """A class's verdict from its configs' bounds: disputed if work moved on any config; ok if every
    config resolves; where only noise left some unresolved, the class as a whole decides (the
    verdict is the class's): its configs' unseen changes summed, ok within the sum of their
    allowances by ``z`` standard errors of the sum (returned), each config's within its own, else
    unresolved."""
    got = {r["verdict"] for r in rows}
    if "moved" in got or "unresolved" not in got:
        return ("disputed" if "moved" in got else "ok"), None
    if any(r["verdict"] == "unresolved" and r["unresolved_by"] != "noise" for r in rows):
        return "unresolved", None
    du, allow = sum(r["unseen_delta_us"] for r in rows), sum(r["allow_us"] for r in rows)
    se = math.sqrt(sum(r["se_us"] ** 2 for r in rows))
    pooled = {"configs": len(rows), "unseen_delta_us": du, "se_us": se, "allow_us": allow}
    # and every config within its own allowance: pooling shares out the noise, never one config's
    # allowance to another (a review: batches made to spread hid work moved on a small config
    # in the slack of a big config's fall)
    within = all(r["unseen_delta_us"] <= r["allow_us"] for r in rows)
    pooled["verdict"] = "ok" if within and du + z * se <= allow else "unresolved"
    return pooled["verdict"], pooled


def _where(k: str, cand: Candidate, best: dict, du: float) -> str:
    """Where the unseen time went, from the process Nsight Compute wrapped: host work (its CPU time
    per call grew), else copies, memsets or another context (it did not)."""
    cpu = [(src.get("clock_cpu_us") or {}).get(k) for src in (best.get("bound") or {}, cand.bound)]
    wall = [(src.get("clock_wall_us") or {}).get(k) for src in (best.get("bound") or {}, cand.bound)]
    said = ""
    if None not in wall:
        said = (
            f"; its Nsight Compute calls took {wall[1] / 1e3:.2f} ms of wall time each, the best's {wall[0] / 1e3:.2f}"
        )
    if None in cpu:
        return "unknown (no CPU time of the Nsight Compute process)" + said
    dcpu = cpu[1] - cpu[0]
    if dcpu >= max(du, HOST_CPU_US):
        return f"the host: the process Nsight Compute wrapped used {dcpu / 1e3:+.2f} ms more CPU per call" + said
    return (
        f"copies, memsets or another GPU context: no more host CPU time in the process Nsight Compute wrapped "
        f"({dcpu / 1e3:+.2f} ms per call, read in ticks of 10 ms)" + said
    )


def _hint(k: str, cand: Candidate, best: dict, du: float, row: dict) -> str | None:
    """Where a config's grown unseen time went, if it moved, where only noise left it unresolved:
    the host where the process Nsight Compute wrapped used more CPU per call, else copies, memsets
    or another context (issue 42, point 2: host work at 2% of a call was left unresolved with no
    word of where). None without the CPU times to say it from."""
    if row["verdict"] != "unresolved" or row["unresolved_by"] != "noise" or du <= 0:
        return None
    where = _where(k, cand, best, du)
    return None if where.startswith("unknown") else f"if it moved, {where}"


def _unseen_note(verdict: str, rows: list[dict], pooled: dict | None = None) -> str:
    """The class's note for a bound that failed: the configs, their figures and where the time went
    (and the class's configs together, where they were pooled)."""
    bad = [r for r in rows if r["verdict"] == ("moved" if verdict == "disputed" else "unresolved")]
    parts = [
        f"{r['key']}: GPU time {r['gpu_delta_us']:+.2f} us, the bound's batches {r['bound_delta_us']:+.2f} us per "
        f"call, so unseen time {r['unseen_delta_us']:+.2f} +- {r['se_us']:.2f} us (allowed {r['allow_us']:.2f})"
        + (f"; where: {r['where']}" if r["where"] else "")
        + ("; its calls are host-bound (the batch times the host)" if r["host_bound"] else "")
        + (_sizes(r["calls"]) if r["unresolved_by"] == "batch sizes" else "")
        for r in bad
    ]
    if pooled:
        parts.append(
            f"its {pooled['configs']} configs together: unseen time {pooled['unseen_delta_us']:+.2f} +- "
            f"{pooled['se_us']:.2f} us (allowed {pooled['allow_us']:.2f})"
        )
    if verdict == "disputed":
        head = "disputed: the GPU time fell but the calls did not get faster by as much on the judge's own clock"
        tail = (
            "work moved where Nsight Compute does not look; settle it by hand with override: in the version's metadata"
        )
    else:
        head = "unresolved: the judge's bound does not resolve this class's noise threshold on this machine"
        tail = "not kept without it (more bound batches, bench.bound_batches_max, or a longer config resolve more)"
    return f"{head} ({'; '.join(parts)}): {tail}"


def _sizes(calls: dict) -> str:
    """Why batches of other sizes are not compared, and how to settle it."""
    again = "the best" if calls["mine"] != calls["best"] else "the version with the least unseen time"
    return (
        f"; batched {calls['mine']} calls against the best's {calls['best']} (the least unseen time's: "
        f"{calls['floor']}): a batch's fixed costs are shared over its calls, so these are not compared; measure "
        f"{again} again beside it (snakemake -R results/<version>/bench.csv)"
    )


def _noise_verdict(delta: float, last_dir: int | None, params: Params) -> tuple[str, str | None, int | None]:
    """The deciding clock's verdict under the noise rule: (verdict, note, sub-noise direction to remember)."""
    direction = _sign(delta)
    if abs(delta) >= params.noise_pct:
        return ("improved" if delta < 0 else "regressed"), None, None
    if abs(delta) < params.trend_floor_pct:
        return "tie", f"under the {params.trend_floor_pct:g}% trend floor: does not count toward twice in a row", None
    if direction != 0 and last_dir == direction:
        note = f"below the {params.noise_pct:g}% noise threshold, but the same direction twice in a row"
        return ("improved" if delta < 0 else "regressed"), note, None
    return "tie", None, direction


def _both_clocks(
    verdict: str, note: str | None, small: int | None, script_delta: float, gpu_delta: float, params: Params
) -> tuple[dict, str, str | None, int | None]:
    """Each clock's verdict; "disputed" (nothing remembered) when they point opposite ways beyond noise.
    Returns (clocks, verdict, note, small)."""
    s_verdict = _plain_verdict(script_delta, params.noise_pct)
    clocks = {"gpu_time": verdict, "script": s_verdict}
    if {verdict, s_verdict} != {"improved", "regressed"}:
        return clocks, verdict, note, small
    note = (
        f"disputed: the GPU time says {gpu_delta:+.2f}% ({clocks['gpu_time']}) but the script's "
        f"timer {script_delta:+.2f}% ({s_verdict}); a keep needs both clocks (settle it by hand with "
        "override: in the version's metadata)"
    )
    return clocks, "disputed", note, None


def _disagreement(
    keys: list[str], cand: Candidate, script_delta: float, gpu_delta: float | None, params: Params
) -> str | None:
    """Where the two clocks tell different stories (per config, or per class), in words."""
    out: list[str] = []
    if gpu_delta is not None:
        s_verdict = _plain_verdict(script_delta, params.noise_pct)
        g_verdict = _plain_verdict(gpu_delta, params.noise_pct)
        if s_verdict != g_verdict or abs(script_delta - gpu_delta) > DISAGREE_PTS:
            out.append(
                f"the script's timer says {script_delta:+.2f}% ({s_verdict}) "
                f"but the profiler's GPU time {gpu_delta:+.2f}% ({g_verdict})"
            )
    differ = [k for k in keys if cand.gpu_us.get(k) and abs(cand.gpu_us[k] / cand.medians[k] - 1) * 100 > DISAGREE_PTS]
    if differ:
        out.append(f"the profiler's GPU time and the script's median differ by more than {DISAGREE_PTS:g}% on {differ}")
    return "; ".join(out) or None


def class_noise(
    params: Params, keys: list[str], a: dict, a_se: dict, b: dict, b_se: dict, a_n=None, b_n=None
) -> tuple[float, float | None]:
    """A class's noise threshold (%) for times ``b`` against ``a`` (per config, on one clock), and
    its delta's standard error (class_se_pct): ``noise_pct``; or ``noise_floor_us`` of a's time per
    call when that is more (a short launch); or ``noise_se_z`` standard errors when that is more
    still (a clock that resolves less on this kernel than the rule asks), as Student's t at the same
    confidence where the calls behind the errors are known (``a_n``, ``b_n``: config -> calls; an
    error from 8 calls is itself uncertain). The fold's and a rerun's (kopt.loop.rerun)."""
    se_pct = class_se_pct(keys, a, a_se, b, b_se)
    a_us = geomean(a[k] for k in keys)
    floor = 100.0 * params.noise_floor_us / a_us if a_us > 0 else 0.0
    z = se_multiple(params.noise_se_z, welch_df(keys, a, a_se, a_n or {}, b, b_se, b_n or {}))
    return max(params.noise_pct, floor, z * (se_pct or 0.0)), se_pct


def _allowance_noise(params: Params, keys: list[str], best: dict, cand: Candidate) -> float:
    """The class threshold the unseen allowance uses: the candidate's relative errors taken as the
    best's, and one machine's. A kernel can make its own calls vary (Nsight Compute's error cuts
    launches into calls by count): with its own errors a version with no real gain kept over half
    its work out of sight (an adversarial review, issue 42); they only widen the margin on its
    unseen time, towards "unresolved"."""
    bg, bse, bn = best.get("gpu_us") or {}, best.get("gpu_se") or {}, best.get("gpu_n") or {}
    mirror = {k: bse[k] / bg[k] * cand.gpu_us[k] for k in keys if k in bse and bg.get(k)}
    return class_noise(params, keys, bg, bse, cand.gpu_us, mirror, bn, bn)[0]


def _across_machines(noise: float, best: dict, cand: Candidate, params: Params) -> tuple[float, dict | None]:
    """The class's threshold when the best was clocked on another GPU or machine start than the
    candidate (both recorded): at least ``machine_spread_pct``, what one kernel read apart between
    machine starts; and the record of it (None on one machine). The unseen work a class may add is
    not widened so (``_allowance_noise``): work moved out of Nsight Compute's sight could claim up
    to 3% / (1 - bound_share) as a gain."""
    theirs, mine = best.get("machine"), cand.machine
    if not theirs or not mine or theirs == mine:
        return noise, None
    wider = max(noise, params.machine_spread_pct)
    return wider, {
        "best": theirs,
        "candidate": mine,
        "note": f"the best ({best['version']}) was clocked on another GPU or machine start: within {wider:.2g}% "
        f"a tie; measure it again beside this one to resolve less (snakemake -R results/{best['version']}/bench.csv)",
    }


def welch_df(keys: list[str], a: dict, a_se: dict, a_n: dict, b: dict, b_se: dict, b_n: dict) -> float | None:
    """The degrees of freedom of a class's delta (Welch-Satterthwaite over its configs' relative
    variances, each from its calls less one); None unless every config of both sides has an error
    and at least two calls."""
    terms = []
    for t, se, n in ((a, a_se, a_n), (b, b_se, b_n)):
        for k in keys:
            if k not in se or not t.get(k) or (n.get(k) or 0) < 2:
                return None
            terms.append(((se[k] / t[k]) ** 2, n[k] - 1))
    den = sum(v * v / d for v, d in terms)
    return sum(v for v, _ in terms) ** 2 / den if den > 0 else None


def se_multiple(z: float, df: float | None) -> float:
    """``z`` standard errors as Student's t at the same one-sided confidence for ``df`` degrees of
    freedom (``z`` itself without them). On the H100 an honest 48 µs softmax read 47.64-48.43 µs on
    Nsight Compute in 16 processes of 8 calls (standard errors 0.17 µs on average, their spread
    0.23): three errors called 8 of the 240 ordered pairs "improved", t at Welch's degrees of freedom 2
    (docs/runs/h100-bound/session10/clock_drift_16.txt)."""
    if df is None:
        return z
    from scipy import stats

    return float(stats.t.ppf(stats.norm.cdf(z), df))


def class_se_pct(keys: list[str], a: dict, a_se: dict, b: dict, b_se: dict) -> float | None:
    """The standard error (%) of a class's delta, the geometric mean of its configs' ratios b/a,
    from each time's own standard error (Nsight Compute's calls); None unless every config of both
    has one. Two processes of one kernel differ by about this much: on the H100 an honest 48 µs
    softmax read 47.6-48.3 µs in ten processes of 8 calls (docs/runs/h100-clock/)."""
    if not all(k in a_se and k in b_se and a.get(k) and b.get(k) for k in keys):
        return None
    var = sum((a_se[k] / a[k]) ** 2 + (b_se[k] / b[k]) ** 2 for k in keys)
    return 100.0 * math.sqrt(var) / len(keys)


def _plain_verdict(delta: float, noise: float) -> str:
    """A delta against the noise threshold alone: improved, regressed or tie."""
    return "tie" if abs(delta) < noise else ("improved" if delta < 0 else "regressed")


def _sign(x: float) -> int:
    """-1, 0 or 1."""
    return (x > 0) - (x < 0)


# --- the decision from the class verdicts -------------------------------------------------------


def _decide_on_verdicts(step: _Step, verdicts: dict[str, str]) -> None:
    """Keep, split-recommended or discard from the class verdicts (the rules in the module docstring)."""
    cand = step.cand
    targeted = set(verdicts) if cand.target_classes is None else set(cand.target_classes) & set(verdicts)
    improved = [c for c, v in verdicts.items() if v == "improved"]
    regressed = [c for c, v in verdicts.items() if v == "regressed"]
    t_improved = [c for c in improved if c in targeted]
    disputed = [c for c, v in verdicts.items() if v in ("disputed", "unresolved")]
    if disputed:
        _disputed(step, disputed, verdicts)
    elif t_improved and regressed and cand.routes is not None:
        _split_regressed(step, t_improved, regressed)
    elif t_improved and regressed:
        _recommend_split(step, t_improved, regressed)
    elif improved and not regressed:
        _keep(step, improved, targeted)
    elif regressed:
        _regression(step, regressed)
    else:
        _tie(step)
    if cand.override and not disputed:
        step.comp["override_ignored"] = "override: settles only a disputed version; the clocks agreed on this one"
    if not cand.evidence:
        _not_evidence(step)


def _disputed(step: _Step, disputed: list[str], verdicts: dict[str, str]) -> None:
    """Not kept while its clocks disagree or its bound does not resolve (``unresolved``), unless a
    person settled it (``override``), recorded as such."""
    comp, st, cand = step.comp, step.state, step.cand
    st["consecutive_regressions"] = 0
    reason = "disputed" if any(verdicts[c] == "disputed" for c in disputed) else "unresolved"
    if reason == "disputed":
        detail = f"the clocks disagree on {disputed} (each class's note says how)"
        why = ": not kept without both clocks"
    else:
        detail = f"the judge's bound on unseen work does not resolve {disputed} (each class's note gives the numbers)"
        why = ": not kept unresolved"
    ov = cand.override
    if not ov:
        comp.update(decision="discard", reason=reason, detail=detail + why)
        return
    comp.update(decision=ov["decision"], reason="override", detail=f"{detail}; settled by hand: {ov['reason']}")
    comp["override"] = {"decision": ov["decision"], "reason": ov["reason"], "disputed": disputed}
    if ov["decision"] == "keep":
        st["best"] = _best_of(cand, step.best)
        comp["untrusted"] = OVERRIDDEN  # whatever the clocks: the keep is a person's word (or an agent's)


def _mark_untrusted(step: _Step, classes: list[str]) -> None:
    """A keep is marked untrusted where a command target's own CSV checked and timed it, where its
    inputs came from a fixed seed, or where a class it rests on was not decided on Nsight Compute's
    GPU time, read outside the kernel's process (a class decided on the script's median, when the
    two versions' GPU times are on different clocks, rests on the kernel's own events)."""
    rows = [r for r in step.comp["per_class"] if r["class"] in classes]
    if step.cand.self_reported:
        step.comp["untrusted"] = SELF_REPORTED
    elif step.cand.predictable:
        step.comp["untrusted"] = PREDICTABLE
    elif step.cand.evidence and not all(r.get("gpu_clock") == "ncu" for r in rows):
        step.comp["untrusted"] = UNTRUSTED


def _split_regressed(step: _Step, t_improved: list[str], regressed: list[str]) -> None:
    """Already a split: a class it routes elsewhere got slower, so it is not kept (a regression)."""
    detail = f"improves {t_improved} but regresses {regressed}"
    step.comp.update(decision="discard", reason="regression", detail=detail)
    step.state["consecutive_regressions"] = step.before["consecutive_regressions"] + 1


def _recommend_split(step: _Step, t_improved: list[str], regressed: list[str]) -> None:
    """A targeted class improved while another regressed: propose dispatching each to its better kernel."""
    best, version = step.best["version"], step.cand.version
    step.comp.update(
        decision="split-recommended",
        reason="improved and regressed classes",
        detail=f"improves {t_improved} but regresses {regressed}: keep {best} for "
        f"{regressed} and dispatch {t_improved} to {version}",
        split={
            "improved": t_improved,
            "regressed": regressed,
            "dispatch": [{"when": _when(t_improved), "use": version}, {"use": best}],
        },
    )
    step.state["consecutive_regressions"] = 0


def _keep(step: _Step, improved: list[str], targeted: set[str]) -> None:
    """Something improved and nothing regressed: the candidate is the new best."""
    off = [c for c in improved if c not in targeted]
    detail = f"improved {improved}" + (f" (outside the target: {off})" if off else "")
    step.comp.update(decision="keep", reason="improved", detail=detail)
    step.state.update(best=_best_of(step.cand, step.best), consecutive_regressions=0)
    _mark_untrusted(step, improved)


def _regression(step: _Step, regressed: list[str]) -> None:
    """A class regressed: discard, count it (repairs do not count), and remember the worst class."""
    cand, st = step.cand, step.state
    step.comp.update(decision="discard", reason="regression", detail=f"regressed {regressed}")
    st["consecutive_regressions"] = step.before["consecutive_regressions"] + (0 if cand.repair_of else 1)
    worst = max((r for r in step.comp["per_class"] if r["verdict"] == "regressed"), key=lambda r: r["delta_pct"])
    st["recent_regressions"] = (st["recent_regressions"] + [_regression_entry(step, worst)])[-RECENT:]


def _regression_entry(step: _Step, worst: dict) -> dict:
    """What the next proposal reads about a regression: the idea, its files and its worst class."""
    cand = step.cand
    entry = {"version": cand.version, "hypothesis": cand.hypothesis, "files": cand.files, "best": step.best["version"]}
    for k in ("class", "best_us", "candidate_us", "best_gpu_us", "candidate_gpu_us", "basis", "delta_pct"):
        entry[k] = worst[k]
    return entry


def _tie(step: _Step) -> None:
    """Every class within noise: discard as a tie; the counter resets."""
    detail = f"every class within {step.params.noise_pct:g}% noise"
    if step.cand.interpreter:
        detail = "every class a tie: the Triton interpreter's timings decide nothing"
    step.comp.update(decision="discard", reason="tie", detail=detail)
    step.state["consecutive_regressions"] = 0


def _not_evidence(step: _Step) -> None:
    """A verdict from CPU-interpreter timings: labelled, and the loop's counters left as they were."""
    step.comp["evidence"] = NOT_EVIDENCE
    for k in ("consecutive_regressions", "recent_regressions", "last_small_direction"):
        step.state[k] = step.before[k]


# --- the state's best, and a split's dispatch entry ----------------------------------------------


def _best_of(c: Candidate, before: dict | None = None) -> dict:
    """The state's record of a best version: its timings and roofline targets, and what its unseen
    time is held to from now on: per config the least unseen time of the baseline and every keep
    (``unseen_floor``), and the baseline's GPU time (``baseline_gpu``), so that work moved out of
    Nsight Compute's sight cannot add up keep by keep (an adversarial review, issue 42)."""
    before = before or {}
    floor = dict(before.get("unseen_floor") or {})
    for k in c.gpu_us:
        mine = unseen(c, k)
        if mine is not None and (k not in floor or mine["us"] < floor[k]["us"]):
            floor[k] = {f: mine[f] for f in ("us", "se", "calls")}
    return {
        "unseen_floor": floor,
        "baseline_gpu": dict(before.get("baseline_gpu") or c.gpu_us),
        "version": c.version,
        "medians": dict(c.medians),
        "gpu_us": dict(c.gpu_us),
        "clock": c.clock,
        "gpu_se": dict(c.gpu_se),
        "gpu_n": dict(c.gpu_n),
        "machine": c.machine,
        "launches": dict(c.launches),
        "bound": {col: dict(v) for col, v in c.bound.items()},
    }


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


def _value(text: str):
    """A class name's value as int, float or (failing both) the text."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text
