"""Rule `bench` (rules/bench.smk; `baseline` times torch through it too): time a correct version
per config in a child process under the GPU gate, and refuse figures beyond the hardware."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from kopt.measure.runner import run_gated
from kopt.steps.common import child_request, config_cells, records_of, write_json
from kopt.workspace.provenance import hashes, now
from kopt.workspace.records import BENCH_COLUMNS
from kopt.workspace.target import load_workspace


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
) -> pd.DataFrame:
    """Time a version that passed the gate (``impl``: a torch baseline instead); a config faster
    than the hardware allows (``hardware_json``'s ceilings) is refused."""
    ws = load_workspace(Path(target).parent, versions=False)
    corr = json.loads(Path(correctness_json).read_text())
    req = child_request(ws, kernel, params, impl)
    device = corr["device"]
    method = "cpu-interpreter" if device == "cpu" else "cuda-events"
    rows, samples, env, child, gate, inputs = [], [], corr["provenance"].get("env"), "not run", None, {}
    items = req["configs_by_device"]["cpu" if device == "cpu" else "cuda"]
    if corr["status"] != "pass":  # the correctness gate: no timing of an incorrect or failed kernel
        why = f"not timed: correctness {corr['status']}: {corr['error']}"
        rows = [{**config_cells(it), "status": "skipped", "device": device, "method": method, "error": why} for it in items]
    else:
        outcome = run_gated("bench", req, params, timeout_s=params["timeout_s"], log_path=log)
        device, records, err, env2 = records_of(outcome, req)
        env, child, gate = env2 or env, outcome.status, outcome.gate
        gpu = (env or {}).get("gpu") or "cpu"
        for r in records:
            row = {**config_cells(r), "status": "failed" if err else "ok", "device": gpu, "error": err}
            if "median_us" in r:
                row.update({k: r.get(k) for k in ("median_us", "host_us", "p20_us", "p80_us", "n_samples", "gbps", "tflops", "flops", "bytes")})
                row.update(method=r["method"], profiler_us=r.get("profiler_us"), event_null_us=r.get("event_null_us"))
                row.update(profiled_event_us=r.get("profiled_event_us"), profiled_host_us=r.get("profiled_host_us"))
                row.update(sm_clock_mhz=r.get("sm_clock_mhz"), throttled=r.get("throttled"))
                samples += [{"config_key": r["key"], "sample": i, **s} for i, s in enumerate(r["samples"])]
                inputs[r["key"]] = {**r["inputs"], "l2_persisting_reset": r.get("l2_persisting_reset"), "profiled_seeds": r.get("profiled_seeds")}
            else:
                row["method"] = method
            rows.append(row)
    limit_check = None
    if hardware_json:
        limit_check = refuse_beyond_hardware(rows, json.loads(Path(hardware_json).read_text()), params.get("ceiling_margin_pct", 15.0))
    cfg_cols = list(items[0]["config"]) if items else []
    df = pd.DataFrame(rows, columns=cfg_cols + BENCH_COLUMNS)
    Path(out_csv).parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out_csv, index=False)
    pd.DataFrame(samples, columns=["config_key", "sample", "us", "host_us", "seed", "set"]).to_csv(out_samples, index=False)
    write_json(
        out_meta,
        {
            "version": version,
            "device": device,
            "timing": {
                "method": method,
                "note": "cpu-interpreter figures are Triton-interpreter timings on the CPU: not GPU performance"
                if device == "cpu"
                else "median of CUDA-event samples, L2 flushed and outputs checked around every call",
                "opts": params.get("bench", {}),
            },
            "physical_limit": limit_check,
            "inputs": {
                "settings": params.get("inputs", {}),
                "note": "every call draws fresh inputs (a new seed) into one of a pool of input sets visited in "
                "random cycles (the timed and profiled calls are whole cycles); each call's outputs are checked against the reference of its own inputs",
                "per_config": inputs,
            },
            "provenance": {**hashes(kernel, ws.ref, ws.target, params), "created": now(), "env": env, "child": child, "gate": gate},
        },
    )
    return df


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
            row.update(status="failed", error=f"config {row['config_key']}: faster than the hardware allows: {why}; result reuse or skipped work? (or ref.py's flops()/bytes_moved() overstate the work)")
    return {**limits, "checked": True}
