"""The clock's marker (kopt.measure.outside_clock): between two calls under Nsight Compute, the
judge orders one launch of this empty kernel with a grid it draws at random; in Nsight Compute's
record the markers cut the launches into the calls' windows. A marker comes only after the judge
has the previous call's answer, and before it draws the next call's inputs."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

NAME = "kopt_clock_mark"  # the kernel's name in Nsight Compute's record


@triton.jit
def kopt_clock_mark(ptr, n):
    if tl.program_id(0) == n:  # never: n is the grid's size
        tl.store(ptr, n)


_spare: list = []


def mark(grid: int) -> None:
    """One launch of the marker over ``grid`` programs, finished before this returns."""
    if not _spare:
        _spare.append(torch.empty(1, dtype=torch.int32, device="cuda"))  # no launch: it is never read
    kopt_clock_mark[(grid,)](_spare[0], grid)
    torch.cuda.synchronize()
