"""The tripwire inside the kernel's process: a kernel that replaces a timing, checking or channel
function, or leaves a thread running, fails with one line naming what it replaced.

It is a tripwire, never the proof: a kernel can patch lazily after the last check, or reach
further with native code. Verdicts rest on what the judge reads from its own memory
(kopt.measure.trial); this only turns the obvious attempts into a clear ``failed``.
"""

from __future__ import annotations

import json
import pickle
import socket
import struct
import threading
import time

import torch

from kopt.measure.faults import KernelFault


class Guard:
    """Detects a kernel that patches timing or checking functions, or leaves threads running."""

    WATCHED = [
        (time, "perf_counter"),
        (time, "perf_counter_ns"),
        (time, "monotonic"),
        (time, "time"),
        (torch, "isclose"),
        (torch, "isnan"),
        (torch, "equal"),
        (torch, "eq"),
        (torch.Tensor, "all"),
        (torch.Tensor, "fill_"),
        (torch.Tensor, "zero_"),
        (torch.Tensor, "copy_"),
        (torch.cuda, "synchronize"),
        (torch.cuda, "Event"),
        (torch.cuda.Event, "record"),
        (torch.cuda.Event, "elapsed_time"),
        (torch.cuda.Event, "synchronize"),
        (torch.cuda, "current_stream"),
        (json, "dumps"),
        (json, "dump"),
        (json, "loads"),
        (pickle, "loads"),
        (pickle, "dumps"),
        (struct, "pack"),
        (socket.socket, "sendall"),
        (socket, "send_fds"),
    ]

    def __init__(self, extra_modules=(), allow_threads: bool = False):
        self.allow_threads = allow_threads
        self.items = [(o, a, getattr(o, a)) for o, a in self.WATCHED]
        for mod in extra_modules:
            for name, val in list(vars(mod).items()):
                if callable(val) and not name.startswith("__"):
                    self.items.append((mod, name, val))
        # the threads themselves, not their idents: a thread that ends frees its ident for the next
        # one started (CI: torch's timer thread took the ident of a thread the test found before it)
        self.threads = set(threading.enumerate())

    def check(self, where: str) -> None:
        for obj, attr, val in self.items:
            if getattr(obj, attr, None) is not val:
                owner = getattr(obj, "__name__", type(obj).__name__)
                raise KernelFault(f"{where}: the kernel replaced {owner}.{attr}; timing and checks cannot be trusted")
        busy = [] if self.allow_threads else [t.name for t in _working(self.threads)]
        if busy:
            raise KernelFault(
                f"{where}: the kernel left a background thread running ({busy[-3:]}); work outside the call cannot "
                "be timed (a library's own thread waiting between jobs is allowed, a thread pool's idle workers among them: the work must end inside the call)"
            )


# Where a library's own thread waits between its jobs: (file, function) of the frame below the
# waiting primitives. A concurrent.futures worker waiting on its queue (gpu-mode's torch.compile
# submissions keep a pool); torch.compile's Inductor reading its compile workers' pipe; tqdm's
# monitor between its checks; Inductor's timer that shuts its idle compile workers down, asleep
# between checks (all three found on the H100 in pmpp_v2/vectorsum's submission).
IDLE_LOOPS = (
    ("concurrent/futures/thread.py", "_worker"),
    ("torch/_inductor/compile_worker/subproc_pool.py", "_recv_msg"),
    ("torch/_inductor/compile_worker/timer.py", "check"),
    ("tqdm/_monitor.py", "run"),
)
WAITING = ("/threading.py", "/queue.py")  # Event.wait, Condition.wait, Queue.get


def _working(before: set[threading.Thread]) -> list[threading.Thread]:
    """The threads started since ``before`` (the threads alive then) that are not a library's own thread
    waiting between its jobs (``IDLE_LOOPS``, below any waiting primitive): any other thread, or
    one of those running, is working. A tripwire, as the Guard is: the proof that the work is done
    inside the call is the judge's check right after it."""
    import sys

    frames = sys._current_frames()
    # this thread's own frame holds ``frames``: a cycle that kept every caller's frame, and the
    # kernel's returned outputs in them, alive until Python's next collection (H100: KernelBench's
    # GELU held three 6 GiB outputs and ran out of memory, docs/runs/h100-kernel-memory/)
    frames.pop(threading.get_ident(), None)
    out = []
    for t in threading.enumerate():
        if t in before or not t.is_alive():
            continue
        if not _idle(frames.get(t.ident)):
            out.append(t)
    return out


def _idle(frame) -> bool:
    while frame is not None and frame.f_code.co_filename.endswith(WAITING):
        frame = frame.f_back
    if frame is None:
        return False
    code = frame.f_code
    return any(code.co_filename.endswith("/" + f) and code.co_name == fn for f, fn in IDLE_LOOPS)
