"""Per-config timing that the kernel under test cannot fool.

GPU ("cuda-events"): like triton.testing.do_bench, a warm-up first, then per sample the L2 is
flushed (a 256 MB write, as do_bench does) and CUDA events bracket one call, queued behind a spin
kernel so the host's launch latency stays outside the events (nvbench's blocking kernel). Also:
  * the outputs are poisoned (NaN) before every timed call and checked against the float64
    reference after it, so a kernel that skips work on repeated calls with the same buffers, or
    finishes its work later (another thread, another stream), fails instead of looking fast;
  * at the end, fresh values are written into the same buffers and checked once more;
  * torch.profiler's per-kernel GPU time over all streams is compared with the event time, so
    work launched on a stream the events do not see is caught;
  * patched timing/checking functions and leftover threads are detected (harness.Guard).
CPU ("cpu-interpreter"): the Triton interpreter, timed with perf_counter; the same checks apart
from the L2 flush and the profiler. These figures say nothing about GPU performance.
"""

from __future__ import annotations

import math
import time

import numpy as np
import torch

from .harness import Case, Guard, make_case, outputs_close, poison_outputs, seed_for, sync
from .variants import KernelFault
from .workspace import config_key

_perf_counter = time.perf_counter
_Event = torch.cuda.Event

L2_FLUSH_BYTES = 256 * 1024 * 1024
# Before each timed call the GPU is kept busy with a spin kernel (torch.cuda._sleep) while the host
# enqueues the start event and the launch, as nvbench's "blocking kernel" does: otherwise, when the
# GPU drains its queue (poison + flush) faster than Python launches the kernel, the host's launch
# latency lands between the events. 500k cycles is about 0.25 ms at 2 GHz.
SPIN_CYCLES = 500_000


def _call(kernel, case: Case) -> None:
    try:
        kernel(**case.inputs)
    except KernelFault:
        raise
    except Exception as e:
        raise KernelFault(f"run_kernel raised {type(e).__name__}: {e}") from e


def _verify(case: Case, tol: dict, guard: Guard, where: str) -> None:
    guard.check(where)
    if not outputs_close(case, tol["atol"], tol["rtol"]):
        raise KernelFault(
            f"{where}: the outputs of a timed call are wrong or unwritten (they were poisoned "
            "before the call); the kernel must do all its work inside every call"
        )


def _samples_cuda(kernel, case: Case, tol: dict, opts: dict, guard: Guard, key: str) -> list[float]:
    cache = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda") if opts["flush_l2"] else None
    # warm-up: compile, then estimate the per-call time
    t0 = _perf_counter()
    n_warm = 0
    while n_warm < 3 or (_perf_counter() - t0) * 1e3 < opts["warmup_ms"]:
        poison_outputs(case)
        _call(kernel, case)
        sync("cuda")
        n_warm += 1
        if n_warm == 1:
            _verify(case, tol, guard, f"config {key}, warm-up call")
    est = _Event(enable_timing=True), _Event(enable_timing=True)
    est[0].record()
    for _ in range(5):
        _call(kernel, case)
    est[1].record()
    sync("cuda")
    est_ms = max(est[0].elapsed_time(est[1]) / 5, 1e-4)
    n = int(min(opts["max_samples"], max(opts["min_samples"], math.ceil(opts["rep_ms"] / est_ms))))
    samples = []
    for i in range(n):
        poison_outputs(case)
        if cache is not None:
            cache.zero_()
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        torch.cuda._sleep(SPIN_CYCLES)
        start.record()
        _call(kernel, case)
        end.record()
        torch.cuda.synchronize()  # device-wide: every stream's work must be done before the check
        _verify(case, tol, guard, f"config {key}, timed call {i}")
        samples.append(start.elapsed_time(end) * 1e3)
    return samples


def _samples_cpu(kernel, case: Case, tol: dict, opts: dict, guard: Guard, key: str) -> list[float]:
    for i in range(opts["cpu_warmup"]):
        poison_outputs(case)
        _call(kernel, case)
        _verify(case, tol, guard, f"config {key}, warm-up call {i}")
    samples = []
    for i in range(opts["cpu_samples"]):
        poison_outputs(case)
        t0 = _perf_counter()
        _call(kernel, case)
        t1 = _perf_counter()
        _verify(case, tol, guard, f"config {key}, timed call {i}")
        samples.append((t1 - t0) * 1e6)
    return samples


def _profiler_us_per_call(kernel, case: Case, calls: int = 5) -> float | None:
    """Sum of all GPU kernel time per call, on every stream (None if the profiler is unavailable)."""
    from torch.profiler import ProfilerActivity, profile

    sync("cuda")
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            _call(kernel, case)
        sync("cuda")
    total = 0.0
    for ev in prof.events():
        dt = getattr(ev, "device_type", None)
        if dt is not None and "CUDA" in str(dt):
            total += getattr(ev, "device_time", getattr(ev, "cuda_time", 0.0)) or 0.0
    return total / calls if total > 0 else None


def bench_config(ref, kernel, cfg: dict, cls: str, *, tol: dict, device: str, opts: dict, guard: Guard) -> dict:
    key = config_key(cfg)
    case = make_case(ref, cfg, seed_for(key, 1000), device)
    if device == "cuda":
        samples = _samples_cuda(kernel, case, tol, opts, guard, key)
        method = "cuda-events" + ("+l2-flush" if opts["flush_l2"] else "")
    else:
        samples = _samples_cpu(kernel, case, tol, opts, guard, key)
        method = "cpu-interpreter"
    arr = np.asarray(samples)
    rec = {
        "config": cfg,
        "key": key,
        "class": cls,
        "median_us": float(np.median(arr)),
        "p20_us": float(np.percentile(arr, 20)),
        "p80_us": float(np.percentile(arr, 80)),
        "n_samples": len(samples),
        "method": method,
        "samples_us": [round(s, 4) for s in samples],
    }
    # Fresh values in the same buffers: a kernel that caches results by buffer must fail here.
    fresh = make_case(ref, cfg, seed_for(key, 2000), device)
    for k, v in fresh.inputs.items():
        if isinstance(v, torch.Tensor):
            case.inputs[k].copy_(v)
    case.expected = fresh.expected
    poison_outputs(case)
    _call(kernel, case)
    sync(device)
    _verify(case, tol, guard, f"config {key}, call with fresh inputs in the same buffers")
    if device == "cuda":
        try:
            prof_us = _profiler_us_per_call(kernel, case)
        except Exception as e:  # the profiler is a cross-check; its absence is recorded, not fatal
            prof_us, rec["profiler_note"] = None, f"profiler unavailable: {type(e).__name__}: {e}"
        rec["profiler_us"] = prof_us
        # Honest work on the timed stream runs inside the events, so its kernel time is at most
        # the event time; more means work the events did not bracket.
        if prof_us is not None and prof_us > 1.25 * rec["median_us"] + 1.0:
            raise KernelFault(
                f"config {key}: the profiler saw {prof_us:.1f} us of GPU work per call but the timed "
                f"stream only {rec['median_us']:.1f} us: the kernel works on a stream the timer does not see"
            )
    flops = getattr(ref, "flops", None)
    nbytes = getattr(ref, "bytes_moved", None)
    sec = rec["median_us"] * 1e-6
    rec["tflops"] = float(flops(**cfg)) / sec / 1e12 if callable(flops) else None
    rec["gbps"] = float(nbytes(**cfg)) / sec / 1e9 if callable(nbytes) else None
    return rec
