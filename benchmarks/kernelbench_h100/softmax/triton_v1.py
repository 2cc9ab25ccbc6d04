"""KernelBench level 1, 23_Softmax: a Triton ModelNew (KernelBench's solution style).

Softmax over dim 1 of a 4096 x 393216 fp32 tensor: a row is 1.5 MB, too long for one program's
registers (the fused softmax of Triton's tutorial holds a whole row), so each program walks its
row twice. Pass 1 keeps an online maximum and sum per lane (the sum rescaled whenever the
lane's maximum grows), merged across lanes at the end; pass 2 writes exp(x - max) / sum. That is
two reads and one write of the tensor, against three reads and a write for a max pass, a sum pass
and a write pass. One program per row, 8 warps, 4096 columns per step.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def softmax_kernel(
    x_ptr,  # pointer to the input, n_rows x n_cols
    out_ptr,  # pointer to the output, same shape
    n_cols,
    stride_x,  # row strides
    stride_out,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    out_row = out_ptr + row * stride_out
    cols = tl.arange(0, BLOCK_SIZE)

    # pass 1: per-lane running maximum m and sum s of exp(x - m)
    m = tl.full([BLOCK_SIZE], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK_SIZE], tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        x = tl.load(x_row + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        seen = m_new > float("-inf")  # a lane that has only seen padding keeps s = 0
        s = tl.where(seen, s * tl.exp(m - m_new) + tl.exp(x - m_new), 0.0)
        m = m_new

    # merge the lanes: the row's maximum, and every lane's sum rescaled to it
    row_max = tl.max(m, axis=0)
    row_sum = tl.sum(tl.where(m > float("-inf"), s * tl.exp(m - row_max), 0.0), axis=0)
    inv_sum = 1.0 / row_sum

    # pass 2: normalise and write
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + cols
        mask = offs < n_cols
        x = tl.load(x_row + offs, mask=mask, other=float("-inf")).to(tl.float32)
        tl.store(out_row + offs, tl.exp(x - row_max) * inv_sum, mask=mask)


def triton_softmax(x: torch.Tensor) -> torch.Tensor:
    assert x.is_cuda, "Tensors must be on CUDA."
    assert x.dim() == 2, "softmax over dim 1 of a 2D tensor"
    x = x.contiguous()
    n_rows, n_cols = x.shape
    out = torch.empty_like(x)
    BLOCK_SIZE = min(4096, triton.next_power_of_2(n_cols))
    softmax_kernel[(n_rows,)](x, out, n_cols, x.stride(0), out.stride(0), BLOCK_SIZE=BLOCK_SIZE, num_warps=8)
    return out


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_softmax(x)
