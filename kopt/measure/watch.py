"""The judge's readings of a kernel process's tree from /proc (Linux; trusted side): its CPU time,
and which of its processes hold the GPU. They tell where time went that Nsight Compute does not
see, in the processes it wraps (kopt.measure.outside_clock): host work shows as CPU time, and a
process of the kernel's that opened the GPU's device files beside the one Nsight Compute profiles
(a CUDA context of its own, started without Nsight Compute's injection) is named.

What the kernel's process cannot do to them: its CPU time is the kernel's (the scheduler counts
it, per process, and that of its ended children once they are waited for); its device files are
listed by the kernel of the OS. It can hide neither, only stop doing the work.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from kopt.measure.reaper import descendants
from kopt.profilers.gpus import gpu_majors, holds_gpu

_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def cpu_seconds(pid: int) -> float:
    """CPU time (s) of ``pid`` and every living descendant, with the ended children each has waited
    for (utime, stime, cutime and cstime of /proc/<pid>/stat: clock ticks, 10 ms on Linux)."""
    total = 0
    for p in [pid, *descendants(pid)]:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15])
    return total / _TICK


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()[:120]
    except OSError:
        return "?"


class GpuHolders:
    """While open: every ``every_s`` seconds, every descendant of ``root`` (the judge) that holds the
    GPU is noted by pid and command line (``found``), but ``known`` (the kernel processes the judge
    started, each under its profiler) and the profiler's own programs (``tool_dir``: Nsight
    Compute's installation), never below a kernel's process (``targets``). The whole tree, not the target's: a helper the kernel double-forks is
    re-parented to the profiler or the judge (an adversarial review, issue 42)."""

    def __init__(self, root: int, known: set[int], tool_dir: str | None, targets=(), every_s: float = 0.05):
        self.root, self.known, self.tool_dir, self.every_s, self.found = root, set(known), tool_dir, every_s, {}
        self.targets, self.majors = set(targets), gpu_majors()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="kopt-gpu-holders", daemon=True)

    def _watch(self) -> None:
        while not self.stop.is_set():
            self.scan()
            self.stop.wait(self.every_s)

    def _tool(self, pid: int) -> bool:
        try:
            return bool(self.tool_dir) and os.path.realpath(f"/proc/{pid}/exe").startswith(self.tool_dir + os.sep)
        except OSError:
            return False

    def scan(self) -> None:
        # below a kernel's process nothing is the profiler's, whatever program it runs (a review:
        # one of Nsight Compute's own programs, run with a library preloaded, did the work)
        theirs = {p for t in self.targets for p in descendants(t)}
        for p in descendants(self.root):
            if p in self.known or p in self.found or not holds_gpu(p, self.majors):
                continue
            if p in theirs or not self._tool(p):
                self.found[p] = _name(p)

    def __enter__(self) -> GpuHolders:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join()
        self.scan()
