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
        self.threads = threading.active_count()

    def check(self, where: str) -> None:
        for obj, attr, val in self.items:
            if getattr(obj, attr, None) is not val:
                owner = getattr(obj, "__name__", type(obj).__name__)
                raise KernelFault(f"{where}: the kernel replaced {owner}.{attr}; timing and checks cannot be trusted")
        if not self.allow_threads and threading.active_count() > self.threads:
            names = [t.name for t in threading.enumerate()][-3:]
            raise KernelFault(
                f"{where}: the kernel left a background thread running ({names}); work outside the call cannot be timed"
            )
