"""No process of the kernel's outlives the judge's verdict (Linux).

The judge is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a process the kernel forks, even one
that calls ``setsid`` and whose parent exits, is re-parented to the judge rather than to init, so
the judge can find it. ``sweep`` kills every descendant of this process before a verdict is
written: a forked process waiting to rewrite a result file is gone before the file exists.

Not covered: a kernel that asks a daemon already running as the same user (a tmux server,
``systemd --user``, ``at``) to start a program: that program is not a descendant. Landlock
(kopt.inside.sandbox) keeps the kernel's own process tree from writing the results.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Orphans of this process's descendants come to this process (Linux 3.4+); False elsewhere."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (from /proc)."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            out.append(int(p.name))
    return out


def descendants(pid: int | None = None) -> list[int]:
    """Every living descendant of ``pid`` (this process by default)."""
    todo, found = [pid or os.getpid()], []
    while todo:
        kids = _children(todo.pop())
        found += kids
        todo += kids
    return found


def started(pid: int) -> int:
    """When ``pid`` started (clock ticks since boot; 0 when it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def sweep(keep: frozenset[int] = frozenset(), since: int = 0, rounds: int = 200) -> int:
    """SIGKILL every descendant of this process (but ``keep`` and theirs, and children started
    before ``since``) until none is left; the number killed. Raises RuntimeError when processes
    keep appearing after ``rounds`` passes."""
    killed = 0
    for _ in range(rounds):
        victims = [p for p in _children(os.getpid()) if p not in keep and started(p) >= since]
        if not victims:
            return killed
        for p in victims:
            for d in [*descendants(p), p]:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(d, signal.SIGKILL)
                    killed += 1
        for p in victims:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(p, 0)
        time.sleep(0.001)
    raise RuntimeError("the kernel's processes kept starting new ones: they could not all be stopped")
