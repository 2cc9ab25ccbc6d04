"""What each rule does, as plain functions of paths and params (the scripts only unpack snakemake).

Each step reads only its declared inputs and writes only its outputs, so rules can run as
SLURM jobs on other nodes. A misbehaving kernel never makes a step raise: it is recorded as
``failed``/``incorrect`` data, so the graph goes on with the other versions.
"""

from __future__ import annotations

import json
import math
import sys
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import yaml

from . import decide as dec
from .provenance import StaleResult, hashes, now
from .render import render
from .runner import run_gated
from .workspace import Workspace, WorkspaceError, config_class, config_key, load_workspace


def _items(ws: Workspace, configs: list[dict]) -> list[dict]:
    return [
        {
            "config": c,
            "key": config_key(c),
            "class": config_class(c, ws.class_by),
            "tol": ws.tolerance(c),
            "tolerances": ws.tolerances,
        }
        for c in configs
    ]


def _request(ws: Workspace, kernel: str, params: dict, impl: str | None = None) -> dict:
    return {
        "ref": str(ws.ref),
        "kernel": f"torch:{impl}" if impl else str(kernel),
        "device": params.get("device", "auto"),
        "seeds": ws.seeds,
        "configs_by_device": {"cpu": _items(ws, ws.cpu_configs), "cuda": _items(ws, ws.configs)},
        "opts": params.get("bench", {}),
        "inputs": params.get("inputs", {}),
    }


def _write_json(path: str | Path, obj) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(obj, indent=2, default=str) + "\n")


def _merge(outcome, request: dict) -> tuple[str, list[dict], str | None, dict | None]:
    """Records per config (finished, failed, not run), the overall error, and the child's env."""
    result = outcome.result or {}
    records = result.get("configs") or list(outcome.records)
    device = result.get("device") or outcome.device
    done = {r["key"] for r in records}
    err = None if outcome.ok else outcome.error
    # the configs the child would have run (on the device it chose, or was told to use)
    items = request["configs_by_device"]["cpu" if (device or request["device"]) == "cpu" else "cuda"]
    failing = outcome.current.removeprefix("config ") if outcome.current else None
    for it in items:
        if it["key"] in done:
            continue
        if it["key"] == failing:
            records.append({**it, "result": "FAILED", "reason": err, "seeds": []})
        else:
            records.append({**it, "result": "NOT RUN", "reason": None, "seeds": []})
    return device or request["device"], records, err, result.get("env")


def check_reference(*, target: str, out_json: str, log: str, params: dict) -> dict:
    """ref.py on its own, before any version is judged: a fault stops the graph with one line
    (WorkspaceError) naming the file, the function and the config, and touches no version."""
    ws = load_workspace(Path(target).parent, versions=False)
    req = _request(ws, str(ws.ref), params)
    outcome = run_gated("reference", req, params, timeout_s=params["timeout_s"], log_path=log)
    if not outcome.ok:
        err = str(outcome.error).removeprefix("ref.py: ").removeprefix(f"{ws.ref}: ")
        raise WorkspaceError(f"{ws.ref}: {err}; no version was run")
    doc = {**outcome.result, "provenance": {**hashes(str(ws.ref), ws.ref, ws.target, params), "created": now()}}
    _write_json(out_json, doc)
    return doc


def correctness(
    *, version: str, target: str, kernel: str, out_json: str, out_md: str, log: str, params: dict, impl: str | None = None
) -> dict:
    """``impl`` (eager / compile) checks the torch baseline instead; ``kernel`` is then ref.py."""
    ws = load_workspace(Path(target).parent, versions=False)
    req = _request(ws, kernel, params, impl)
    outcome = run_gated("correctness", req, params, timeout_s=params["timeout_s"], log_path=log)
    device, records, err, env = _merge(outcome, req)
    for r in records:
        r.setdefault("result", "PASS" if r.get("ok") else "FAIL")
        r.pop("tol", None)
    if err:
        status = "failed"
    elif any(r["result"] != "PASS" for r in records):
        status = "incorrect"
        bad = next(r for r in records if r["result"] != "PASS")
        err = f"config {bad['key']}: {bad['reason']}"
    else:
        status = "pass"
    doc = {
        "version": version,
        "status": status,
        "error": err,
        "device": device,
        "method": "cpu-interpreter" if device == "cpu" else device,
        "seeds": ws.seeds,
        "configs": records,
        "provenance": {
            **hashes(kernel, ws.ref, ws.target, params),
            "created": now(),
            "env": env,
            "child": outcome.status,
            "gate": outcome.gate,
        },
    }
    _write_json(out_json, doc)
    Path(out_md).write_text(
        render(
            "correctness.md.j2",
            version=version,
            status={"pass": "pass", "incorrect": "fail", "failed": "failed"}[status],
            error=err,
            kernel=kernel,
            ref=str(ws.ref),
            device=device,
            seeds=ws.seeds,
            configs=records,
            provenance=doc["provenance"],
        )
    )
    return doc


BENCH_COLUMNS = [
    "config_key",
    "config_class",
    "status",
    "median_us",
    "host_us",
    "p20_us",
    "p80_us",
    "n_samples",
    "gbps",
    "tflops",
    "flops",
    "bytes",
    "profiler_us",
    "event_null_us",
    "profiled_event_us",
    "profiled_host_us",
    "sm_clock_mhz",
    "throttled",
    "device",
    "method",
    "error",
]


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
    req = _request(ws, kernel, params, impl)
    device = corr["device"]
    method = "cpu-interpreter" if device == "cpu" else "cuda-events"
    rows, samples, env, child, gate, inputs = [], [], corr["provenance"].get("env"), "not run", None, {}
    items = req["configs_by_device"]["cpu" if device == "cpu" else "cuda"]
    if corr["status"] != "pass":  # the correctness gate: no timing of an incorrect or failed kernel
        why = f"not timed: correctness {corr['status']}: {corr['error']}"
        rows = [{**_cfg_cols(it), "status": "skipped", "device": device, "method": method, "error": why} for it in items]
    else:
        outcome = run_gated("bench", req, params, timeout_s=params["timeout_s"], log_path=log)
        device, records, err, env2 = _merge(outcome, req)
        env, child, gate = env2 or env, outcome.status, outcome.gate
        gpu = (env or {}).get("gpu") or "cpu"
        for r in records:
            row = {**_cfg_cols(r), "status": "failed" if err else "ok", "device": gpu, "error": err}
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
    _write_json(
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
    from .hardware import physical_limits
    from .roofline import beyond_hardware

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


@contextmanager
def one_line_faults():
    """A workspace fault or a stale input fails the job with one line on the terminal (kopt: ...)."""
    try:
        yield
    except (WorkspaceError, StaleResult) as e:
        print(f"kopt: {e}")
        sys.__stderr__.write(f"kopt: {e}\n")
        raise SystemExit(1) from None


def redirect_log(path: str):
    """Send a rule script's stdout/stderr to its ``log:`` file."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    f = open(path, "w", buffering=1)
    sys.stdout = sys.stderr = f
    return f


def _cfg_cols(item: dict) -> dict:
    return {**item["config"], "config_key": item["key"], "config_class": item["class"]}


def candidate(
    version: str, correctness_json: str, df: pd.DataFrame, meta: dict, kernel: str, bottleneck: dict | None = None
) -> dec.Candidate:
    corr = json.loads(Path(correctness_json).read_text())
    tc = meta.get("target_class", "all")
    tcs = [tc] if isinstance(tc, str) else list(tc)
    status, reason = corr["status"], corr["error"]
    if status == "pass":
        failed = df[df["status"] != "ok"]
        if len(failed) or df["median_us"].isna().any() or (df["median_us"] <= 0).any():
            status = "failed"
            reason = str(failed["error"].iloc[0]) if len(failed) else "benchmark produced no valid median"
    ok = status == "pass"
    evidence = not (len(df) and (df["method"] == "cpu-interpreter").any())
    gate_timeout = bool(reason and str(reason).startswith("gate:"))
    routes = None
    if meta.get("dispatch"):
        from .workspace import route_for

        cols = [c for c in df.columns if c not in BENCH_COLUMNS]
        routes = {r.config_key: route_for(meta["dispatch"], {c: getattr(r, c) for c in cols}) for r in df.itertuples()}
    return dec.Candidate(
        repair_of=meta.get("repair_of"),
        masked=bool(meta.get("masked", False)),
        override=meta.get("override"),
        routes=routes,
        gate_timeout=gate_timeout,
        version=version,
        status="ok" if ok else status,
        reason=reason,
        medians={r.config_key: float(r.median_us) for r in df.itertuples()} if ok else {},
        class_of={r.config_key: r.config_class for r in df.itertuples()},
        target_classes=None if "all" in tcs else tcs,
        hypothesis=meta.get("hypothesis", ""),
        files=[kernel],
        gpu_us={r.config_key: float(r.profiler_us) for r in df.itertuples() if pd.notna(r.profiler_us) and r.profiler_us > 0}
        if ok and "profiler_us" in df
        else {},
        target_reached={c["class"]: bool(c["target_reached"]) for c in bottleneck["classes"]}
        if ok and evidence and bottleneck and bottleneck.get("status") == "ok"
        else None,
        evidence=bool(evidence),
    )


def compare(
    *,
    version: str,
    target: str,
    kernel: str,
    meta_yaml: str,
    correctness_json: str,
    bench_csv: str,
    prev_compare: str | None,
    out_json: str,
    params: dict,
    bottleneck_json: str | None = None,
    parent_kernel: str | None = None,
    parent_bottleneck: str | None = None,
) -> dict:
    ws = load_workspace(Path(target).parent, versions=False)
    state = json.loads(Path(prev_compare).read_text())["state"] if prev_compare else dec.initial_state()
    df = pd.read_csv(bench_csv)
    bneck = json.loads(Path(bottleneck_json).read_text()) if bottleneck_json else None
    meta = yaml.safe_load(Path(meta_yaml).read_text()) or {}
    cand = candidate(version, correctness_json, df, meta, kernel, bneck)
    p = dec.Params(
        params["noise_pct"],
        params["max_consecutive_regressions"],
        params.get("trend_floor_pct", 0.0),
        params.get("review_speedup", 10.0),
    )
    comp, _ = dec.decide(state, cand, p)
    comp["device"] = str(df["device"].iloc[0]) if len(df) else None
    comp["method"] = str(df["method"].iloc[0]) if len(df) else None
    comp["hypothesis"] = cand.hypothesis
    comp["target_classes"] = cand.target_classes or "all"
    if bneck and bneck.get("status") == "ok":
        comp["roofline"] = {
            c["class"]: {"fraction_min": c["roofline_fraction_min"], "target_reached": c["target_reached"], "bottleneck": c["bottleneck"]}
            for c in bneck["classes"]
        }
    comp["diff"] = diff_size(kernel, parent_kernel)
    comp["provenance"] = {**hashes(kernel, ws.ref, ws.target, params), "created": now()}
    gpu = ((json.loads(Path(correctness_json).read_text()).get("provenance") or {}).get("env") or {}).get("gpu")
    comp["experience"] = _experience_entry(comp, ws, df, parent_bottleneck, meta.get("strategy"), gpu)
    _write_json(out_json, _clean(comp))
    return comp


def diff_size(kernel: str, parent: str | None) -> dict | None:
    """Lines changed against the parent's kernel: one idea per version cannot be checked, but a
    reviewer sees how big the change is."""
    import difflib

    if not parent or not Path(parent).is_file() or Path(kernel).suffix != ".py" or Path(parent).suffix != ".py":
        return None
    a, b = Path(parent).read_text().splitlines(), Path(kernel).read_text().splitlines()
    added = removed = 0
    for line in difflib.unified_diff(a, b, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return {"parent": str(parent), "lines_added": added, "lines_removed": removed, "lines_changed": added + removed}


def _experience_entry(
    comp: dict, ws, df: pd.DataFrame, parent_bottleneck: str | None, strategy: str | None, gpu: str | None
) -> dict:
    """This comparison as an experience-log entry (rule `experience` collects them into the
    project's store); CPU-interpreter timings teach nothing, so they give none."""
    from .experience import entry_from_comparison

    if comp.get("evidence"):
        return {"skipped": comp["evidence"]}
    bn = "unknown"
    if parent_bottleneck and Path(parent_bottleneck).is_file():
        classes = json.loads(Path(parent_bottleneck).read_text()).get("classes", [])
        targets = comp.get("target_classes")
        pick = [c for c in classes if targets == "all" or c["class"] in (targets or [])] or classes
        if pick:
            names = [c["bottleneck"] for c in pick]
            bn = max(set(names), key=names.count)
    # the GPU's name (also for a version that was never benchmarked), else the device column
    chip = gpu or (str(df["device"].iloc[0]) if len(df) else "cpu")
    entry = entry_from_comparison(
        comp, kernel_type=ws.name, chip=chip, bottleneck=bn, strategy=strategy, workspace=str(ws.root)
    )
    return {"entry": entry}


def _clean(obj):
    """JSON has no NaN: write null instead."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


def write_state(last_compare: str, out_json: str) -> dict:
    comp = json.loads(Path(last_compare).read_text())
    st = comp["state"]
    doc = {
        "after": comp["version"],
        "best": (st.get("best") or {}).get("version"),
        "consecutive_regressions": st.get("consecutive_regressions", 0),
        "repairs": st.get("repairs", {}),
        "abandoned": st.get("abandoned", []),
        "masked": st.get("masked", []),
        "stop": st.get("stop", False),
        "stop_reason": st.get("stop_reason"),
        "recent_regressions": st.get("recent_regressions", []),
        "created": now(),
    }
    _write_json(out_json, doc)
    return doc
