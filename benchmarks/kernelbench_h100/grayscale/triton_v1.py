"""gpu-mode pmpp_v2, grayscale_py: a Triton custom_kernel (the submission's format).

Y = 0.2989 R + 0.5870 G + 0.1140 B for an H x W x 3 fp32 image into the H x W output it is given:
one Triton program per 1024 pixels reads their 3072 contiguous floats (three strided loads that
the same cache lines serve) and writes 1024, one pass over memory, where the submission's torch
code writes data * weights (H x W x 3) and reads it back to sum it.

Not yet timed on a GPU: its run on an H200 stopped at the problem's own v0, which the judge could
not time at 16384 (docs/runs/h200-across-levels-formats/; fixed since, not rerun).
"""

import triton
import triton.language as tl
from task import input_t, output_t


@triton.jit
def grayscale_kernel(rgb_ptr, out_ptr, n_pixels, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    ok = offs < n_pixels
    r = tl.load(rgb_ptr + 3 * offs, mask=ok, other=0.0)
    g = tl.load(rgb_ptr + 3 * offs + 1, mask=ok, other=0.0)
    b = tl.load(rgb_ptr + 3 * offs + 2, mask=ok, other=0.0)
    tl.store(out_ptr + offs, r * 0.2989 + g * 0.5870 + b * 0.1140, mask=ok)


def custom_kernel(data: input_t) -> output_t:
    rgb, output = data
    assert rgb.is_contiguous() and output.is_contiguous()
    n = output.numel()
    BLOCK = 1024
    grayscale_kernel[(triton.cdiv(n, BLOCK),)](rgb, output, n, BLOCK=BLOCK, num_warps=4)
    return output
