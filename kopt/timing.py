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

from . import nvml
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
THROTTLE_FRACTION = 0.75


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


def _bus_id() -> str | None:
    try:
        p = torch.cuda.get_device_properties(0)
        return f"{p.pci_domain_id:08x}:{p.pci_bus_id:02x}:{p.pci_device_id:02x}.0"
    except Exception:  # noqa: BLE001 - older torch: NVML index 0
        return None


def _samples_cuda(
    kernel, case: Case, tol: dict, opts: dict, guard: Guard, key: str, clocks: list[int]
) -> list[float]:
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
    bus = _bus_id()
    for i in range(n):
        poison_outputs(case)
        if cache is not None:
            cache.zero_()
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        torch.cuda._sleep(SPIN_CYCLES)
        start.record()
        _call(kernel, case)
        end.record()
        if i % 10 == 0:  # the GPU is busy with the spin and the call: its clock under load
            clk = nvml.sm_clock_mhz(bus)
            if clk is not None:
                clocks.append(clk)
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


def profiled_calls(kernel, case: Case, calls: int, trace_path: str, flush: bool = True) -> dict:
    """Run ``calls`` timed-loop iterations under torch.profiler and return the Chrome trace.

    Each iteration is what the timer does: poison the outputs, flush L2 and spin (inside
    ``kopt::prep`` ranges, which torchtrace leaves out), then one call, then a device-wide sync. The trace is
    written to ``trace_path`` (kept as the raw profiler output where the caller wants it).
    """
    from torch.profiler import ProfilerActivity, profile, record_function

    from . import torchtrace

    cache = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda") if flush else None
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            with record_function(torchtrace.PREP):
                poison_outputs(case)
                if cache is not None:
                    cache.zero_()
                torch.cuda._sleep(SPIN_CYCLES)  # as in the timed loop: the flush drains before the call
            with record_function(torchtrace.CALL):
                _call(kernel, case)
            torch.cuda.synchronize()
    prof.export_chrome_trace(trace_path)
    return torchtrace.load(trace_path)


def _null_event_us(n: int = 30) -> float:
    """Median time of an empty event pair queued behind the same spin: the timer's own floor."""
    out = []
    for _ in range(n):
        start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        torch.cuda._sleep(SPIN_CYCLES)
        start.record()
        end.record()
        torch.cuda.synchronize()
        out.append(start.elapsed_time(end) * 1e3)
    return float(np.median(out))


def bench_config(ref, kernel, cfg: dict, cls: str, *, tol: dict, device: str, opts: dict, guard: Guard) -> dict:
    key = config_key(cfg)
    case = make_case(ref, cfg, seed_for(key, 1000), device)
    if device == "cuda":
        clocks: list[int] = []
        samples = _samples_cuda(kernel, case, tol, opts, guard, key, clocks)
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
    if device == "cuda":
        max_clk = nvml.sm_clock_mhz(_bus_id(), maximum=True)
        med_clk = float(np.median(clocks)) if clocks else None
        rec["sm_clock_mhz"] = med_clk
        rec["sm_clock_max_mhz"] = max_clk
        # a clock under 75% of its maximum while the kernel runs: the figures are throttled
        rec["throttled"] = bool(med_clk is not None and max_clk and med_clk < THROTTLE_FRACTION * max_clk)
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
        import tempfile

        from . import torchtrace

        rec["event_null_us"] = _null_event_us()
        calls = int(opts.get("profile_calls", 50))
        try:
            with tempfile.TemporaryDirectory() as tmp:
                trace = profiled_calls(kernel, case, calls, f"{tmp}/trace.json", flush=bool(opts["flush_l2"]))
            prof_us = torchtrace.gpu_us_per_call(trace, calls)
            if prof_us is None:
                rec["profiler_note"] = "the profiler recorded no GPU work for the kernel"
        except KernelFault:
            raise
        except Exception as e:  # the profiler is a cross-check; its absence is recorded, not fatal
            prof_us, rec["profiler_note"] = None, f"profiler unavailable: {type(e).__name__}: {e}"
        rec["profiler_us"] = prof_us
        _verify(case, tol, guard, f"config {key}, profiled calls")
        # Honest work on the timed stream runs between the events, so its GPU time is at most the
        # event time minus the empty event pair's; more means work the events did not bracket.
        bracketed = max(rec["median_us"] - rec["event_null_us"], 0.0)
        if prof_us is not None and prof_us > 1.25 * bracketed + 0.5:
            raise KernelFault(
                f"config {key}: the profiler saw {prof_us:.2f} us of GPU work per call but the timed stream "
                f"only {bracketed:.2f} us ({rec['median_us']:.2f} us minus the empty event pair's "
                f"{rec['event_null_us']:.2f} us): the kernel works on a stream the timer does not see"
            )
    flops = getattr(ref, "flops", None)
    nbytes = getattr(ref, "bytes_moved", None)
    sec = rec["median_us"] * 1e-6
    rec["flops"] = float(flops(**cfg)) if callable(flops) else None
    rec["bytes"] = float(nbytes(**cfg)) if callable(nbytes) else None
    rec["tflops"] = rec["flops"] / sec / 1e12 if rec["flops"] is not None else None
    rec["gbps"] = rec["bytes"] / sec / 1e9 if rec["bytes"] is not None else None
    return rec
