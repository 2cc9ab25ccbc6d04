"""``python -m kopt.inside.confined [--pipes-of DIR] SCRATCH PROGRAM [ARG ...]``: PROGRAM run under
the kernel's sandbox (kopt.inside.sandbox: writes only under SCRATCH and the GPU's device files, no
signal to a process outside it where Landlock scopes signals; with ``--pipes-of``, the pipes of
the process tracker of the profiler whose front end's TMPDIR is DIR).

Two users. The judge runs its tools that parse files the kernel's process wrote this way
(cuobjdump on a Triton version's cubins: kopt.profilers.cuobjdump), so a file made to break the
tool reaches no more than the kernel's own process could. And every kernel's process the judge
starts afresh (not forked from a spare) starts this way (kopt.measure.boundary.KernelProcess): the
sandbox applied, then exec, so
every thread that process will have is born confined (Landlock confines no thread already running,
and a profiler's injection, CUDA's context, torch start theirs before any order), and the files
the profiler handed it are closed before its Python starts. PROGRAM finds the sandbox's line in
``KOPT_CONFINED``."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys

from kopt.inside import sandbox


def die_with_parent() -> None:
    """SIGKILL for this process when its parent (the judge, or the profiler wrapping it) dies
    (Linux's PR_SET_PDEATHSIG, kept across an exec): set before anything else runs, so a job
    stopped while this process starts leaves nothing behind."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)


def main(argv: list[str]) -> None:
    die_with_parent()
    profiler_tmp = None
    if argv[0] == "--pipes-of":
        profiler_tmp, argv = argv[1], argv[2:]
    scratch, program = argv[0], argv[1:]
    os.makedirs(scratch, exist_ok=True)
    os.environ["TMPDIR"] = scratch  # its own temporary files, as the kernel's process has them
    os.environ["KOPT_CONFINED"] = sandbox.confine(scratch, profiler_tmp)
    os.execv(program[0], program)


if __name__ == "__main__":
    main(sys.argv[1:])
