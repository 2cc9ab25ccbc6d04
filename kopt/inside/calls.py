"""One call of the kernel, as the kernel's process makes it: the only timed iteration there.

On a GPU: persisting-L2 state reset (kopt.inside.l2), the L2 flushed (a 256 MB write, as
triton.testing.do_bench does), a spin kernel queued so the host's launch latency stays outside the
CUDA events (nvbench's blocking kernel), the events around the one call, and a device-wide
synchronize; on the CPU (Triton interpreter), perf_counter around the call.

What this returns is the kernel process's own report of its time: the judge labels it so
(``clock: in-process``). The outputs it leaves in the judge's arena are what the judge checks.
"""

from __future__ import annotations

import contextlib
import time
from typing import Any, NamedTuple

import torch

from kopt.inside.l2 import PersistingL2
from kopt.measure.device import L2_FLUSH_BYTES, SPIN_CYCLES
from kopt.profilers import torchtrace  # its range names only: the judge reads the trace

_perf_counter = time.perf_counter
_Event = torch.cuda.Event


class Lab:
    """What brackets a call on this device: the L2 flush buffer and the persisting-L2 reset."""

    def __init__(self, device: str, flush_l2: bool):
        self.device = device
        on = device == "cuda" and flush_l2
        self.flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda") if on else None
        self.l2 = PersistingL2(device)

    def clear_caches(self) -> None:
        self.l2.reset()
        if self.flush is not None:
            self.flush.zero_()


def _range(name: str, on: bool):
    from torch.profiler import record_function

    return record_function(name) if on else contextlib.nullcontext()


class Timed(NamedTuple):
    us: float  # the call on its clock: CUDA events on a GPU, perf_counter on the CPU
    host_us: float  # how long the call kept the host before returning
    ret: Any  # what the call returned
    idle: bool = False  # the GPU was idle when the call returned: the end event waited on the host


def event_time_us(fn, device: str, *, lab: Lab | None = None, spin_cycles: int = 0, profiled: bool = False) -> Timed:
    """``fn()`` timed once: on a GPU, ``lab``'s caches cleared, a spin of ``spin_cycles`` queued, CUDA
    events around the call and a device-wide synchronize; on the CPU, perf_counter around it.
    ``profiled``: this side's own work inside ``kopt::prep``, the call inside ``kopt::call``
    (kopt.profilers.torchtrace). ``idle``: the stream had run dry when the call returned (it
    synchronised inside, or kept the host longer than the spin)."""
    cuda = device == "cuda"
    if cuda:
        with _range(torchtrace.PREP, profiled):
            if lab is not None:
                lab.clear_caches()
            if spin_cycles:
                torch.cuda._sleep(spin_cycles)
            start, end = _Event(enable_timing=True), _Event(enable_timing=True)
        start.record()
    t0 = _perf_counter()
    with _range(torchtrace.CALL, profiled):
        ret = fn()
    t1 = _perf_counter()
    idle = False
    if cuda:
        idle = torch.cuda.current_stream().query()
        end.record()
        torch.cuda.synchronize()  # device-wide: every stream's work is done before the judge reads
    host_us = (t1 - t0) * 1e6
    return Timed(start.elapsed_time(end) * 1e3 if cuda else host_us, host_us, ret, idle)


def plain_call(fn, device: str) -> Timed:
    """``fn()`` between two synchronizes, without flush, spin or events (the correctness gate's calls)."""
    if device == "cuda":
        torch.cuda.synchronize()
    t0 = _perf_counter()
    ret = fn()
    if device == "cuda":
        torch.cuda.synchronize()
    host_us = (_perf_counter() - t0) * 1e6
    return Timed(host_us, host_us, ret)


def back_to_back(kernel, calls: list[dict], device: str) -> tuple[float, list]:
    """``kernel(**args)`` for every ``args`` of ``calls``, one after another with nothing between
    them (the bound's batch: the host queues the next call while the GPU runs this one); the host's
    time per call (µs, its own report) and what each call returned. Nothing is synchronized here."""
    rets = []
    t0 = _perf_counter()
    for args in calls:
        rets.append(kernel(**args))
    return (_perf_counter() - t0) * 1e6 / max(len(calls), 1), rets


class BatchEvents:
    """A bound batch ordered through the GPU (kopt.measure.bound): this process's stream waits for
    the judge's interprocess event ``placed`` (recorded when the inputs are in the arena) before the
    calls, and records its own interprocess event ``done`` after them, on which the judge's read
    waits. Neither side waits on the host, so no hand-over is under the judge's clock."""

    def __init__(self, placed_handle: bytes):
        self.placed_handle = placed_handle
        self.placed = torch.cuda.Event.from_ipc_handle(torch.cuda.current_device(), placed_handle)
        self.done = torch.cuda.Event(interprocess=True)
        self.done_handle = self.done.ipc_handle()

    def wait_for_placed(self) -> None:
        torch.cuda.current_stream().wait_event(self.placed)

    def record_done(self) -> None:
        self.done.record()


def _nothing() -> None:
    return None


def null_event_us(n: int = 30) -> float:
    """The fastest of ``n`` empty event pairs queued behind the spin: the timer's own floor. The
    fastest, not the median: a pair only grows when the host is late to queue its end event."""
    return float(min(event_time_us(_nothing, "cuda", spin_cycles=SPIN_CYCLES).us for _ in range(n)))


class Trace:
    """A torch.profiler session over the calls the judge orders between ``begin`` and ``end``."""

    def __init__(self):
        from torch.profiler import ProfilerActivity, profile

        torch.cuda.synchronize()
        self.prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
        self.prof.__enter__()

    def end(self, path: str) -> None:
        """The session's trace, written at ``path``: the judge reads it (the kernel process's report)."""
        self.prof.__exit__(None, None, None)
        self.prof.export_chrome_trace(path)
