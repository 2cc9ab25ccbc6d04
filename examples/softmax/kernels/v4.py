"""v4: two rows per program (a proposal with a bug: the second row's index is off by one)."""

import torch
import triton
import triton.language as tl


@triton.jit
def softmax_two_rows(x_ptr, y_ptr, M, N, stride_x, stride_y, BLOCK_N: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    for r in tl.static_range(2):
        row = pid * 2 + r + r  # BUG: skips a row (should be pid * 2 + r)
        ok = mask & (row < M)
        x = tl.load(x_ptr + row * stride_x + cols, mask=ok, other=float("-inf")).to(tl.float32)
        x = x - tl.max(x, 0)
        e = tl.exp(x)
        y = e / tl.sum(e, 0)
        tl.store(y_ptr + row * stride_y + cols, y.to(y_ptr.dtype.element_ty), mask=ok)


def run_kernel(x: torch.Tensor, y: torch.Tensor) -> None:
    M, N = x.shape
    BLOCK_N = triton.next_power_of_2(N)
    num_warps = max(1, min(16, BLOCK_N // 256))
    grid = (triton.cdiv(M, 2),)
    softmax_two_rows[grid](x, y, M, N, x.stride(0), y.stride(0), BLOCK_N=BLOCK_N, num_warps=num_warps)
