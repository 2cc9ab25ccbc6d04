"""Rule `bench` (rules/bench.smk; `baseline` times torch through it too): time a correct version
per config in a child process under the GPU gate, and refuse figures beyond the hardware."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from kopt.measure.runner import run_gated
from kopt.steps.common import child_request, config_cells, records_of, write_json
from kopt.steps.correctness import correctness
from kopt.workspace.provenance import hashes, now
from kopt.workspace.records import BENCH_COLUMNS, SampleRow
from kopt.workspace.target import load_workspace

# what a child's record per config gives each bench.csv row (the rest: key, class, status, device, error)
MEASURED = [c for c in BENCH_COLUMNS if c not in ("config_key", "config_class", "status", "device", "error")]
NOTE_GPU = "median of CUDA-event samples, L2 flushed and outputs checked around every call"
NOTE_CPU = "cpu-interpreter figures are Triton-interpreter timings on the CPU: not GPU performance"
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


def bench(
    *,
    version: str,
    target: str,
    kernel: str,
    correctness_json: str,
    out_csv: str,
    out_samples: str,
    out_meta: str,
    log: str,
    params: dict,
    hardware_json: str | None = None,
    impl: str | None = None,
    builds: list[str] | None = None,
) -> pd.DataFrame:
    """Time a version that passed the gate (``impl``: a torch baseline instead; ``builds``: its
    CUDA/HIP kernels' build folders); a config faster than the hardware allows (``hardware_json``'s
    ceilings) is refused."""
    ws = load_workspace(Path(target).parent, versions=False)
    corr = json.loads(Path(correctness_json).read_text())
    req = child_request(ws, kernel, params, impl, builds)
    items = req["configs_by_device"]["cpu" if corr["device"] == "cpu" else "cuda"]
    if corr["status"] != "pass":  # the correctness gate: no timing of an incorrect or failed kernel
        why = f"not timed: correctness {corr['status']}: {corr['error']}"
        method = _method(corr["device"])
        rows = [
            {**config_cells(it), "status": "skipped", "device": corr["device"], "method": method, "error": why}
            for it in items
        ]
        t = Timing(corr["device"], rows, env=corr["provenance"].get("env"))
    else:
        t = _timed(req, params, log, corr["provenance"].get("env"))
    limit_check = None
    if hardware_json:
        hw = json.loads(Path(hardware_json).read_text())
        limit_check = refuse_beyond_hardware(t.rows, hw, params.get("ceiling_margin_pct", 15.0))
    df = pd.DataFrame(t.rows, columns=(list(items[0]["config"]) if items else []) + BENCH_COLUMNS)
    Path(out_csv).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out_csv, index=False)
    pd.DataFrame(t.samples, columns=list(SampleRow.model_fields)).to_csv(out_samples, index=False)
    prov = {
        **hashes(kernel, ws.ref, ws.target, params),
        "created": now(),
        "env": t.env,
        "child": t.child,
        "gate": t.gate,
    }
    write_json(out_meta, _meta(version, t, params, limit_check, prov))
    return df


def _timed(req: dict, params: dict, log: str, env: dict | None) -> Timing:
    """One bench child over every config; a config it did not finish gets the error."""
    outcome = run_gated("bench", req, params, timeout_s=params["timeout_s"], log_path=log)
    device, records, err, child_env = records_of(outcome, req)
    t = Timing(device, [], env=child_env or env, child=outcome.status, gate=outcome.gate)
    gpu = (t.env or {}).get("gpu") or "cpu"
    for r in records:
        row = {**config_cells(r), "status": "failed" if err else "ok", "device": gpu, "error": err}
        if "median_us" in r:
            row.update({k: r.get(k) for k in MEASURED})
            t.samples += [{"config_key": r["key"], "sample": i, **s} for i, s in enumerate(r["samples"])]
            extra = {"l2_persisting_reset": r.get("l2_persisting_reset"), "profiled_seeds": r.get("profiled_seeds")}
            t.inputs[r["key"]] = {**r["inputs"], **extra}
        else:
            row["method"] = _method(device)
        t.rows.append(row)
    return t


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
            "opts": params.get("bench", {}),
        },
        "physical_limit": limit_check,
        "inputs": {"settings": params.get("inputs", {}), "note": NOTE_INPUTS, "per_config": t.inputs},
        "provenance": provenance,
    }


def refuse_beyond_hardware(rows: list[dict], hw: dict, margin_pct: float) -> dict:
    """Fail every row whose achieved rate, on the faster of its two clocks, is above the GPU's
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
        times = [t for t in (row.get("median_us"), row.get("profiler_us")) if t is not None and t == t and t > 0]
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
    bench.json. The baseline rule, the benchmarks and the tests run a version this way."""
    d = Path(out_dir)
    common = {"version": version, "target": target, "kernel": kernel, "impl": impl, "log": log, "params": params}
    common["builds"] = builds
    corr = correctness(**common, out_json=str(d / "correctness.json"), out_md=str(d / "correctness.md"))
    if not time:
        return corr, None
    df = bench(
        **common,
        correctness_json=str(d / "correctness.json"),
        out_csv=str(d / "bench.csv"),
        out_samples=str(d / "bench_samples.csv"),
        out_meta=str(d / "bench.json"),
        hardware_json=hardware_json,
    )
    return corr, df
