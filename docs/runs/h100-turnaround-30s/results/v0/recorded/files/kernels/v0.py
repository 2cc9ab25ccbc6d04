"""v0, the baseline: two-pass online softmax over column tiles.

Pass 1 streams the row once, keeping a per-lane running max and rescaled sum; pass 2 streams it
again to write exp(x - max) / sum. Works for any N with a fixed tile, but reads x twice.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_two_pass(x_ptr, y_ptr, N, stride_x, stride_y, BLOCK_N: tl.constexpr, N_TILES: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    offs = tl.arange(0, BLOCK_N)
    m = tl.full([BLOCK_N], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK_N], tl.float32)
    for t in range(0, N_TILES):
        cols = t * BLOCK_N + offs
        x = tl.load(x_row + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        s = s * tl.exp(m - m_safe) + tl.exp(x - m_safe)
        m = m_new
    row_max = tl.max(m, 0)
    inv_total = 1.0 / tl.sum(s * tl.exp(m - row_max), 0)
    for t in range(0, N_TILES):
        cols = t * BLOCK_N + offs
        x = tl.load(x_row + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - row_max) * inv_total
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=cols < N)


def run_kernel(x: torch.Tensor, y: torch.Tensor) -> None:
    M, N = x.shape
    BLOCK_N = min(1024, triton.next_power_of_2(N))
    softmax_two_pass[(M,)](
        x, y, N, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N, N_TILES=triton.cdiv(N, BLOCK_N), num_warps=4
    )
