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

import os
import sys

from kopt.inside import sandbox
from kopt.measure.reaper import die_with_parent


def main(argv: list[str]) -> None:
    # first, and kept across the exec: a job stopped while this process starts leaves it behind only
    # if its parent died before this line (Python's start-up; the judge's sweep collects those)
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
