"""No process of the kernel's outlives the judge's verdict (Linux).

The judge is a child subreaper (``PR_SET_CHILD_SUBREAPER``): a process the kernel forks, even one
that calls ``setsid`` and whose parent exits, is re-parented to the judge rather than to init, so
the judge can find it. ``sweep`` kills every descendant of this process before a verdict is
written: a forked process waiting to rewrite a result file is gone before the file exists.

A daemon already running as the same user (a tmux server, ``systemd --user``, ``at``) would start
a program that is not a descendant: kopt.inside.sandbox leaves the kernel no way to ask one (TCP
refused, abstract sockets scoped, and the syscall filter's strict form: no connect, no unix
datagram), but where CUDA MPS runs or ``KOPT_KERNEL_SOCKETS`` is set connects are allowed and only
the socket-path cover stands (docs/threat_model.md, "Not covered"). Landlock keeps the kernel's
own process tree from writing the results.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import time
from pathlib import Path

PR_SET_CHILD_SUBREAPER, PR_SET_PDEATHSIG = 36, 1


def become_subreaper() -> bool:
    """Orphans of this process's descendants come to this process (Linux 3.4+); False elsewhere."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def die_with_parent() -> None:
    """SIGKILL for this process when the one that started it (its parent now) dies (Linux)."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process (one scan of /proc)."""
    out = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                out[int(p.name)] = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    return out


def _kids(parents: dict[int, int]) -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for child, parent in parents.items():
        kids.setdefault(parent, []).append(child)
    return kids


def descendants(pid: int | None = None, kids: dict[int, list[int]] | None = None) -> list[int]:
    """Every living descendant of ``pid`` (this process by default); ``kids``: a map made by ``_kids``."""
    kids = _kids(_parents()) if kids is None else kids
    todo, found = [pid or os.getpid()], []
    while todo:
        k = kids.get(todo.pop(), [])
        found += k
        todo += k
    return found


def reap(exclude: frozenset[int] = frozenset()) -> int:
    """Collect every child of this process that has ended (but those in ``exclude``, whose status
    their owners read): orphans the kernel left do not pile up as zombies. The number collected."""
    n = 0
    while True:
        try:
            info = os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            return n
        if info is None or info.si_pid in exclude:
            return n
        with contextlib.suppress(ChildProcessError):
            os.waitpid(info.si_pid, 0)
            n += 1


def started(pid: int) -> int:
    """When ``pid`` started (clock ticks since boot; 0 when it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return 0


def sweep(keep: frozenset[int] = frozenset(), since: int = 0, rounds: int = 200) -> int:
    """SIGKILL every descendant of this process (but ``keep`` and theirs, and children started
    before ``since``) until none is left, reaping each; the number killed. One scan of /proc a
    round, whatever the number of processes. Raises RuntimeError when processes keep appearing
    after ``rounds`` passes."""
    killed, me = 0, os.getpid()
    for _ in range(rounds):
        kids = _kids(_parents())
        victims = [p for p in kids.get(me, []) if p not in keep and started(p) >= since]
        if not victims:
            return killed
        for p in victims:
            for d in [*descendants(p, kids), p]:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(d, signal.SIGKILL)
                    killed += 1
        for p in victims:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(p, 0)
        time.sleep(0.001)
    raise RuntimeError("the kernel's processes kept starting new ones: they could not all be stopped")
