"""The one exception a kernel under test causes: it misbehaved (bad file, raised, cheated, hung)."""

from __future__ import annotations


class KernelFault(RuntimeError):
    """The kernel under test misbehaved (bad file, raised, cheated); the message says how."""


class HarnessFault(RuntimeError):
    """Not the kernel: kopt or the machine is wrong (a child bound to another GPU than the gate
    claimed). The child exits with HARNESS_EXIT and the job fails with the message: no verdict."""


HARNESS_EXIT = 5
