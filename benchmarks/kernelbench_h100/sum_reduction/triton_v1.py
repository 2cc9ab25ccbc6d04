"""KernelBench level 1, 47_Sum_reduction_over_a_dimension: a Triton ModelNew (KernelBench's
solution style).

sum over dim 1 (keepdim) of a 128 x 4096 x 4095 fp32 tensor (8.6 GB read). The tensor is viewed
as (pre, D, post) around the reduced dim; post is contiguous, so each program owns one `pre`
index and BLOCK_P contiguous columns and walks D in [BLOCK_D, BLOCK_P] tiles, accumulating in
fp32 per element of the tile and reducing the tile's rows once at the end.

Tiles from a sweep on one H100 (triton.testing.do_bench, L2 flushed): 64 rows x 128 columns, 8
warps: 3.16 ms against torch.sum's 3.03 ms (16 x 256 with 4 warps: 3.57 ms); both read the 8.6 GB
at about 2.7-2.8 TB/s, so expect a tie or a small loss. Rows are 4095 floats apart: no load is
16-byte aligned.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def sum_dim_kernel(
    x_ptr,  # input viewed as pre x D x post (contiguous)
    out_ptr,  # pre x post
    D,
    POST,
    BLOCK_D: tl.constexpr,
    BLOCK_P: tl.constexpr,
):
    pre = tl.program_id(1).to(tl.int64)
    cols = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    col_mask = cols < POST
    base = x_ptr + pre * D * POST
    rows = tl.arange(0, BLOCK_D)
    acc = tl.zeros([BLOCK_D, BLOCK_P], tl.float32)
    for d0 in range(0, D, BLOCK_D):
        d = d0 + rows
        mask = (d[:, None] < D) & col_mask[None, :]
        acc += tl.load(base + d[:, None].to(tl.int64) * POST + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    total = tl.sum(acc, axis=0)
    tl.store(out_ptr + pre * POST + cols, total.to(out_ptr.dtype.element_ty), mask=col_mask)


def triton_sum(x: torch.Tensor, dim: int) -> torch.Tensor:
    assert x.is_cuda, "Tensors must be on CUDA."
    dim = dim % x.dim()
    x = x.contiguous()
    shape = x.shape
    D = shape[dim]
    pre = 1
    for s in shape[:dim]:
        pre *= s
    post = x.numel() // (pre * D)
    out = torch.empty(shape[:dim] + (1,) + shape[dim + 1 :], dtype=x.dtype, device=x.device)
    BLOCK_D, BLOCK_P = 64, 128
    grid = (triton.cdiv(post, BLOCK_P), pre)
    sum_dim_kernel[grid](x, out, D, post, BLOCK_D=BLOCK_D, BLOCK_P=BLOCK_P, num_warps=8)
    return out


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.dim = dim

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_sum(x, self.dim)
