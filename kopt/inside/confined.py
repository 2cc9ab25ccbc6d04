"""``python -m kopt.inside.confined SCRATCH PROGRAM [ARG ...]``: PROGRAM run under the kernel's
sandbox (kopt.inside.sandbox: writes only under SCRATCH and the GPU's device files, no signal to a
process outside it where Landlock scopes signals). The judge runs its tools that parse files the
kernel's process wrote this way (cuobjdump on a Triton version's cubins: kopt.profilers.cuobjdump),
so a file made to break the tool reaches no more than the kernel's own process could."""

from __future__ import annotations

import os
import sys

from kopt.inside import sandbox


def main(argv: list[str]) -> None:
    scratch, program = argv[0], argv[1:]
    os.makedirs(scratch, exist_ok=True)
    os.environ["TMPDIR"] = scratch  # cuobjdump's own temporary files, as the kernel's process has them
    sandbox.apply(scratch)
    os.execv(program[0], program)


if __name__ == "__main__":
    main(sys.argv[1:])
