"""The one exception a kernel under test causes: it misbehaved (bad file, raised, cheated, hung)."""

from __future__ import annotations


class KernelFault(RuntimeError):
    """The kernel under test misbehaved (bad file, raised, cheated); the message says how."""
