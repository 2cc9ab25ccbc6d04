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
        self.threads = {t.ident for t in threading.enumerate()}

    def check(self, where: str) -> None:
        for obj, attr, val in self.items:
            if getattr(obj, attr, None) is not val:
                owner = getattr(obj, "__name__", type(obj).__name__)
                raise KernelFault(f"{where}: the kernel replaced {owner}.{attr}; timing and checks cannot be trusted")
        busy = [] if self.allow_threads else [t.name for t in _working(self.threads)]
        if busy:
            raise KernelFault(
                f"{where}: the kernel left a background thread running ({busy[-3:]}); work outside the call cannot "
                "be timed (a thread pool's idle workers are allowed: its work must end inside the call)"
            )


def _working(before: set) -> list[threading.Thread]:
    """The threads started since ``before`` (their idents) that are not an idle worker of a thread
    pool: a ``concurrent.futures`` worker waiting on its queue for work (its innermost frame is the
    pool's ``_worker`` loop) is the pool a submission keeps between its calls (gpu-mode's
    torch.compile submissions); one running anything else, or any other thread, is working."""
    import sys

    frames = sys._current_frames()
    out = []
    for t in threading.enumerate():
        if t.ident in before or not t.is_alive():
            continue
        frame = frames.get(t.ident)
        idle = (
            frame is not None
            and frame.f_code.co_name == "_worker"
            and frame.f_code.co_filename.endswith("concurrent/futures/thread.py")
        )
        if not idle:
            out.append(t)
    return out
