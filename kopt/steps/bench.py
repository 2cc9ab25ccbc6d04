"""Rule `measure` (rules/measure.smk), also rule `baseline`'s (torch): the correctness
gate, then the timing of a correct version per config, in one child process under the GPU gate;
figures beyond the hardware are refused."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import pandas as pd

from kopt.measure.runner import ChildOutcome, run_gated
from kopt.steps.common import cannot_run, child_request, config_cells, records_of, write_json
from kopt.steps.correctness import Checked, blocked_check, checked, write_correctness
from kopt.workspace.provenance import hashes, now
from kopt.workspace.records import BENCH_COLUMNS, SampleRow
from kopt.workspace.target import Workspace, load_workspace

# what a child's record per config gives each bench.csv row (the rest: key, class, status, device, error)
MEASURED = [c for c in BENCH_COLUMNS if c not in ("config_key", "config_class", "status", "device", "error")]
NOTE_GPU = "median of CUDA-event samples, L2 flushed and outputs checked around every call"
NOTE_CPU = "cpu-interpreter figures are Triton-interpreter timings on the CPU: not GPU performance"
# which clock decided (bench.csv's clock column; kopt/inside/ runs in the kernel's process)
CLOCKS = {
    "ncu": (
        "ncu: the GPU time of every launch, recorded by Nsight Compute outside the kernel's process and read by "
        "the judge (kopt.measure.outside_clock), decides (gpu_us); the CUDA events, recorded in the kernel's "
        "process, are the second clock held to it (torch.profiler's trace too for a torch baseline); the judge's "
        "own clock per call around batches of back-to-back calls in the timing process (bound_us, bound_se_us) "
        "bounds work Nsight Compute does not see (copies, memsets, host work, other processes)"
    ),
    "in-process": (
        "in-process: no Nsight Compute record; the CUDA events and torch.profiler's GPU time were recorded in the "
        "kernel's own process, which could have written them: a keep on them is labelled untrusted"
    ),
    "judge": (
        "judge: the judge's own clock around each call's order and answer decides (the interpreter finishes the "
        "call before it answers); the kernel process's own perf_counter is kept as host_us, its report of itself"
    ),
}
NOTE_INPUTS = (
    "every call draws fresh inputs (a new seed) into one of a pool of input sets visited in random cycles "
    "(the timed and profiled calls are whole cycles); each call's outputs are checked against the reference of its own inputs"
)


@dataclass
class Timing:
    """What the bench child gave: rows of bench.csv, samples, and where and how it ran."""

    device: str
    rows: list[dict]
    samples: list[dict] = field(default_factory=list)
    inputs: dict = field(default_factory=dict)
    env: dict | None = None
    child: str = "not run"
    gate: dict | None = None
    timeline: dict | None = None  # the child's (ChildOutcome.timeline)


def write_bench(
    t: Timing,
    ws: Workspace,
    items: list[dict],
    *,
    version: str,
    kernel: str,
    out_dir: Path,
    params: dict,
    hardware_json: str | None,
) -> pd.DataFrame:
    """bench.csv, bench_samples.csv and bench.json of one version's timing; a config faster than
    the hardware allows (``hardware_json``'s ceilings) is refused first."""
    limit_check = None
    if hardware_json:
        hw = json.loads(Path(hardware_json).read_text())
        limit_check = refuse_beyond_hardware(t.rows, hw, params.get("ceiling_margin_pct", 15.0))
    df = pd.DataFrame(t.rows, columns=(list(items[0]["config"]) if items else []) + BENCH_COLUMNS)
    out_dir.mkdir(parents=True, exist_ok=True)
    df.to_csv(out_dir / "bench.csv", index=False)
    pd.DataFrame(t.samples, columns=list(SampleRow.model_fields)).to_csv(out_dir / "bench_samples.csv", index=False)
    prov = {
        **hashes(kernel, ws.ref, ws.target, params),
        "created": now(),
        "env": t.env,
        "child": t.child,
        "child_timeline": t.timeline,
        "gate": t.gate,
    }
    write_json(out_dir / "bench.json", _meta(version, t, params, limit_check, prov))
    return df


def not_timed(c: Checked, items: list[dict]) -> Timing:
    """The rows of a version the correctness gate stopped: skipped, with the gate's reason."""
    why = f"not timed: correctness {c.status}: {c.error}"
    method = _method(c.device)
    rows = [
        {**config_cells(it), "status": "skipped", "device": c.device, "method": method, "error": why} for it in items
    ]
    env = (c.outcome.result or {}).get("env") if c.outcome else None
    return Timing(c.device, rows, env=env)


def timed(outcome: ChildOutcome, req: dict, env: dict | None) -> Timing:
    """The bench phase's rows and samples; a config it did not finish gets the error."""
    device, records, err, child_env = records_of(outcome, req)
    t = Timing(device, [], env=child_env or env, child=outcome.status, gate=outcome.gate, timeline=outcome.timeline)
    gpu = (t.env or {}).get("gpu") or "cpu"
    for r in records:
        row = {**config_cells(r), "status": "failed" if err else "ok", "device": gpu, "error": err}
        if "median_us" in r:
            row.update({k: r.get(k) for k in MEASURED})
            t.samples += [{"config_key": r["key"], "sample": i, **s} for i, s in enumerate(r["samples"])]
            extra = {"l2_persisting_reset": r.get("l2_persisting_reset"), "profiled_seeds": r.get("profiled_seeds")}
            extra["clock_calls"] = r.get("clock_calls")  # Nsight Compute's calls: seeds, the judge's wall time
            extra["bound_batches"] = r.get("bound_batches")  # the bound's batches (kopt.measure.bound)
            t.inputs[r["key"]] = {**r["inputs"], **extra}
        else:
            row["method"] = _method(device)
        t.rows.append(row)
    return t


def phases(outcome: ChildOutcome) -> tuple[ChildOutcome, ChildOutcome | None]:
    """The one ``check_then_time`` child as the correctness child and the bench child it stands
    for; the bench part is None when the gate stopped the version (or the child died before)."""
    shared = {
        "device": outcome.device,
        "log_tail": outcome.log_tail,
        "gate": outcome.gate,
        "timeline": outcome.timeline,
    }
    if outcome.ok:
        res = outcome.result
        check = ChildOutcome("ok", result=res["correctness"], **shared)
        return check, (ChildOutcome("ok", result=res["bench"], **shared) if res["bench"] else None)
    timed = outcome.phase in ("bench", "profile") or str(outcome.phase).startswith("clock")
    if not timed:  # failed before or while checking
        return outcome, None
    first = outcome.phases["bench"]
    checked_part = {"device": outcome.device, "env": outcome.env, "configs": outcome.records[:first]}
    check = ChildOutcome("ok", result=checked_part, **shared)
    return check, replace(outcome, records=outcome.records[first:], phases={})


def _method(device: str) -> str:
    """How a config without its own samples was (or would have been) timed on ``device``."""
    return "cpu-interpreter" if device == "cpu" else "cuda-events"


def _meta(version: str, t: Timing, params: dict, limit_check: dict | None, provenance: dict) -> dict:
    """bench.json: how the figures were taken, the physical-limit check, the inputs, provenance."""
    method = _method(t.device)
    return {
        "version": version,
        "device": t.device,
        "timing": {
            "method": method,
            "note": NOTE_CPU if t.device == "cpu" else NOTE_GPU,
            "clock": [CLOCKS[c] for c in dict.fromkeys(r.get("clock") for r in t.rows) if c in CLOCKS],
            "opts": params.get("bench", {}),
        },
        "physical_limit": limit_check,
        "inputs": {"settings": params.get("inputs", {}), "note": NOTE_INPUTS, "per_config": t.inputs},
        "provenance": provenance,
    }


def refuse_beyond_hardware(rows: list[dict], hw: dict, margin_pct: float) -> dict:
    """Fail every row whose achieved rate, on the fastest of its clocks, is above the GPU's
    physical limit by more than ``margin_pct``: result reuse or skipped work, never a keep.
    Not on the CPU: its ceilings are DRAM rates, and the small interpreter configs run from cache.
    Returns what was checked against, for bench.json."""
    from kopt.analysis.registry import physical_limits
    from kopt.analysis.roofline import beyond_hardware

    limits = {**physical_limits(hw.get("ceilings") or {}), "margin_pct": margin_pct}
    if hw.get("device") == "cpu":
        return {**limits, "checked": False, "why": "CPU interpreter: its configs run from cache, above the DRAM rates"}
    for row in rows:
        if row.get("status") != "ok" or row.get("median_us") is None:
            continue
        clocks = (row.get("median_us"), row.get("profiler_us"), row.get("gpu_us"))
        times = [t for t in clocks if t is not None and t == t and t > 0]
        why = beyond_hardware(
            flops=row.get("flops"), nbytes=row.get("bytes"), time_us=min(times), limits=limits, margin_pct=margin_pct
        )
        if why:
            row.update(
                status="failed",
                error=f"config {row['config_key']}: faster than the hardware allows: {why}; result reuse or skipped work? (or ref.py's flops()/bytes_moved() overstate the work)",
            )
    return {**limits, "checked": True}


def check_then_time(
    out_dir: str | Path,
    *,
    version: str,
    target: str,
    kernel: str,
    log: str,
    params: dict,
    hardware_json: str | None = None,
    impl: str | None = None,
    time: bool = True,
    builds: list[str] | None = None,
) -> tuple[dict, pd.DataFrame | None]:
    """The correctness gate, then (unless ``time`` is False) the timing, of one kernel or torch
    baseline ``impl`` into ``out_dir``: correctness.{json,md}, bench.csv, bench_samples.csv and
    bench.json. One child process does both (torch starts once per version); it times only when
    every config passed. ``builds``: the build folders of a CUDA/HIP version's kernels; when they
    cannot run here (a failed build, no GPU) no child starts and the reason is the verdict."""
    ws = load_workspace(Path(target).parent, versions=False)
    req = child_request(ws, kernel, params, impl, builds)
    blocked = cannot_run(builds or [], params)
    outcome = None
    if not blocked:
        task = "check_then_time" if time else "correctness"
        outcome = run_gated(task, req, params, timeout_s=params["timeout_s"], log_path=log)
    files = {"version": version, "kernel": kernel, "params": params, "hardware_json": hardware_json}
    return write_checked(outcome or blocked, Path(out_dir), ws, req, time=time, **files)


def write_checked(
    outcome: ChildOutcome | tuple[str, str],
    out_dir: Path,
    ws: Workspace,
    req: dict,
    *,
    version: str,
    kernel: str,
    params: dict,
    hardware_json: str | None,
    time: bool = True,
) -> tuple[dict, pd.DataFrame | None]:
    """correctness.{json,md} and (unless ``time`` is False) bench.csv, bench_samples.csv and
    bench.json from the ``check_then_time`` child's outcome, or from why no child could run
    (``cannot_run``'s (status, error)). Returns the correctness doc and bench.csv's frame."""
    timing = None
    if isinstance(outcome, tuple):
        check = blocked_check(req, outcome)
    else:
        check_part, timing = phases(outcome) if time else (outcome, None)
        check = checked(check_part, req)
    files = {"version": version, "kernel": kernel, "params": params}
    doc = write_correctness(
        check, ws, out_json=str(out_dir / "correctness.json"), out_md=str(out_dir / "correctness.md"), **files
    )
    if not time:
        return doc, None
    items = req["configs_by_device"]["cpu" if check.device == "cpu" else "cuda"]
    if check.status == "pass" and timing is not None:
        t = timed(timing, req, doc["provenance"]["env"])
    else:
        t = not_timed(check, items)
    return doc, write_bench(t, ws, items, out_dir=out_dir, hardware_json=hardware_json, **files)
