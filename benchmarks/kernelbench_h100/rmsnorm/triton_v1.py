"""KernelBench level 1, 36_RMSNorm_: a Triton ModelNew (KernelBench's solution style).

x / sqrt(mean(x**2, dim=1) + eps) for a 112 x 64 x 512 x 512 fp32 tensor (7.5 GB): the mean runs
over the 64 features, which lie 512*512 elements apart. The tensor is viewed as (B, F, S); each
program loads a [F, BLOCK_S] tile (every feature of BLOCK_S contiguous positions), reduces it over
the features and writes the tile divided by its column's RMS: one read and one write of the
tensor, against torch eager's separate square, mean, add, sqrt and divide passes.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def rmsnorm_kernel(
    x_ptr,  # input viewed as B x F x S (contiguous)
    out_ptr,
    F,  # features (reduced over)
    S,  # positions per feature
    eps,
    BLOCK_F: tl.constexpr,  # next power of two >= F
    BLOCK_S: tl.constexpr,
):
    b = tl.program_id(1).to(tl.int64)
    s = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    f = tl.arange(0, BLOCK_F)
    mask = (f[:, None] < F) & (s[None, :] < S)
    offs = b * F * S + f[:, None].to(tl.int64) * S + s[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    mean_sq = tl.sum(x * x, axis=0) / F
    rms = tl.sqrt(mean_sq + eps)
    tl.store(out_ptr + offs, x / rms[None, :], mask=mask)


def triton_rmsnorm(x: torch.Tensor, eps: float) -> torch.Tensor:
    assert x.is_cuda, "Tensors must be on CUDA."
    x = x.contiguous()
    B, F = x.shape[0], x.shape[1]
    S = x.numel() // (B * F)
    out = torch.empty_like(x)
    BLOCK_F = triton.next_power_of_2(F)
    BLOCK_S = max(16, min(128, 8192 // BLOCK_F))  # a tile of at most 8192 elements
    grid = (triton.cdiv(S, BLOCK_S), B)
    rmsnorm_kernel[grid](x, out, F, S, eps, BLOCK_F=BLOCK_F, BLOCK_S=BLOCK_S, num_warps=4)
    return out


class ModelNew(nn.Module):
    def __init__(self, num_features: int, eps: float = 1e-5):
        super().__init__()
        self.num_features = num_features
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_rmsnorm(x, self.eps)
