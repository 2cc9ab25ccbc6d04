"""v0: the Triton kernel, one block of 1024 elements per program (the baseline to beat).

kernel-opt imports this file and calls run_kernel(**inputs) with ref.py's inputs and output
buffers, on the GPU (or in Triton's interpreter without one); it writes `out` in place.
"""

import triton
import triton.language as tl


@triton.jit
def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


def run_kernel(x, y, out, n):
    _add[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
