"""Read a torch.profiler (Kineto) Chrome trace: the GPU work of the kernel under test, per kernel.

Pure (JSON in, numbers out), so it is tested on traces recorded on the H100
(tests/fixtures/profiles/). Three kinds of trace event matter:
  * GPU work: ``cat`` "kernel", "gpu_memset" or "gpu_memcpy", with ``dur`` in µs and
    ``args.correlation``, plus (kernels) ``args.stream``, "registers per thread", "shared memory",
    "grid", "block", "warps per SM", "est. achieved occupancy %";
  * host launches: ``cat`` "cuda_runtime" / "cuda_driver" (HIP: "hip_runtime"...) with the same
    ``args.correlation``, on the launching thread (``tid``) at ``ts``;
  * ranges: ``cat`` "user_annotation" (``torch.profiler.record_function``) on the host thread.
The harness launches its own work (poisoning outputs, flushing L2) inside ``kopt::prep`` ranges;
GPU work whose launch lies in such a range is the harness's, everything else (any stream, any
thread) is the kernel's. That is how work hidden on another stream is still counted.
"""

from __future__ import annotations

import json
from pathlib import Path

PREP = "kopt::prep"
CALL = "kopt::call"
GPU_CATS = ("kernel", "gpu_memset", "gpu_memcpy")


def load(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())


def _is_launch(cat: str) -> bool:
    return "runtime" in cat or "driver" in cat


def _x_events(trace: dict) -> list[dict]:
    return [e for e in trace.get("traceEvents", []) if e.get("ph") == "X"]


def _ranges(evs: list[dict], name: str) -> list[tuple]:
    """The ``name`` ranges, in time order: (start µs, end µs, host thread)."""
    return sorted(
        (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)), e.get("tid"))
        for e in evs
        if e.get("cat") == "user_annotation" and e.get("name") == name
    )


def _launches(evs: list[dict]) -> dict:
    """Correlation id -> (host thread, launch time) of every host launch."""
    return {
        e["args"]["correlation"]: (e.get("tid"), float(e["ts"]))
        for e in evs
        if (e.get("args") or {}).get("correlation") is not None and _is_launch(str(e.get("cat", "")))
    }


def _inside(where: tuple | None, ranges: list[tuple]) -> int | None:
    """The index of the range a launch (thread, time) lies in, if any."""
    if where is None:
        return None
    return next((i for i, (a, b, t) in enumerate(ranges) if where[0] == t and a <= where[1] <= b), None)


def gpu_events(trace: dict, exclude: str = PREP) -> list[dict]:
    """GPU events not launched from inside an ``exclude`` range: name, cat, ts, dur_us, stream, args."""
    evs = _x_events(trace)
    ranges, launches = _ranges(evs, exclude), _launches(evs)
    out = []
    for e in evs:
        if e.get("cat") not in GPU_CATS:
            continue
        args = e.get("args") or {}
        if _inside(launches.get(args.get("correlation")), ranges) is not None:
            continue
        out.append(
            {
                "name": e.get("name", "?"),
                "cat": e["cat"],
                "ts": float(e["ts"]),
                "dur_us": float(e.get("dur", 0.0)),
                "stream": args.get("stream"),
                "args": args,
            }
        )
    return out


def call_busy_us(trace: dict) -> list[float | None]:
    """Per ``kopt::call`` range, in order: how long the GPU was busy with the work launched inside
    it from the range's thread, overlapping work counted once. A call's events less this is the
    time the GPU waited on the host inside them: before the first launch, between launches (a
    wrapper's several kernels, a value read back), and before the end event was queued. None
    when the call launched nothing from that thread: work from elsewhere is never counted here."""
    evs = _x_events(trace)
    calls, launches = _ranges(evs, CALL), _launches(evs)
    gpu = [
        (launches[corr], float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0.0)))
        for e in evs
        if e.get("cat") in GPU_CATS and (corr := (e.get("args") or {}).get("correlation")) in launches
    ]
    busy = []
    for a, b, tid in calls:
        work = sorted((start, end) for where, start, end in gpu if where[0] == tid and a <= where[1] <= b)
        busy.append(_covered(work) if work else None)
    return busy


def _covered(work: list[tuple[float, float]]) -> float:
    """µs that the (start, end) intervals, sorted by start, cover."""
    total, reached = 0.0, work[0][0]
    for start, end in work:
        total += max(end - max(start, reached), 0.0)
        reached = max(reached, end)
    return total


def per_kernel(events: list[dict], calls: int) -> list[dict]:
    """Aggregate by name: calls per timed call, mean µs per launch, total per timed call, share."""
    by: dict[str, dict] = {}
    for e in events:
        k = by.setdefault(
            e["name"], {"name": e["name"], "kind": e["cat"], "launches": 0, "total_us": 0.0, "args": e["args"]}
        )
        k["launches"] += 1
        k["total_us"] += e["dur_us"]
    total = sum(k["total_us"] for k in by.values()) or 1.0
    rows = []
    for k in sorted(by.values(), key=lambda k: -k["total_us"]):
        a = k["args"]
        rows.append(
            {
                "name": k["name"],
                "kind": k["kind"],
                "calls": k["launches"] / calls,
                "mean_us": k["total_us"] / k["launches"],
                "us_per_call": k["total_us"] / calls,
                "share": k["total_us"] / total,
                "registers_per_thread": a.get("registers per thread"),
                "shared_memory_bytes": a.get("shared memory"),
                "grid": a.get("grid"),
                "block": a.get("block"),
                "warps_per_sm": a.get("warps per SM"),
                "est_achieved_occupancy_pct": a.get("est. achieved occupancy %"),
                "streams": sorted({str(e["stream"]) for e in events if e["name"] == k["name"]}),
            }
        )
    return rows


def per_call_us(trace: dict, calls: int) -> list[float]:
    """GPU µs of each call: the kernel's work launched inside the i-th ``kopt::call`` range; work
    launched elsewhere (another thread, after the range) is spread evenly over the calls."""
    raw = _x_events(trace)
    evs, ranges, launches = gpu_events(trace), _ranges(raw, CALL), _launches(raw)
    if len(ranges) != calls:
        total = sum(e["dur_us"] for e in evs)
        return [total / calls] * calls
    per, spread = [0.0] * calls, 0.0
    for e in evs:
        i = _inside(launches.get(e["args"].get("correlation")), ranges)
        if i is None:
            spread += e["dur_us"]
        else:
            per[i] += e["dur_us"]
    return [x + spread / calls for x in per]


def summary(trace: dict, calls: int, per_kernels: bool = False) -> dict:
    """What a trace of ``calls`` calls says per call: the number of GPU events, each call's GPU time
    and busy time (None where no work of its own), and (``per_kernels``) its kernels."""
    events = gpu_events(trace)
    out = {
        "gpu_events": len(events),
        "per_call_us": per_call_us(trace, calls) if events else [],
        "busy_us": call_busy_us(trace),
    }
    if per_kernels:
        out["kernels"] = per_kernel(events, calls)
    return out


def gpu_us_per_call(trace: dict, calls: int) -> float | None:
    """The kernel's GPU time per call: the median over calls of all its kernels, memsets and
    copies, on every stream (the median, like the timer's, so one disturbed call does not move it)."""
    if not gpu_events(trace):
        return None
    xs = sorted(per_call_us(trace, calls))
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2
