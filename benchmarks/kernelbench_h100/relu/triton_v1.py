"""KernelBench level 1, 19_ReLU: a Triton ModelNew (KernelBench's solution style).

ReLU over the flattened tensor (4096 x 393216 fp32, 6.4 GB in, 6.4 GB out): a streaming,
memory-bound kernel. Each program handles BLOCK_SIZE contiguous elements; 4096 elements over
8 warps gives each thread 16 elements, four 128-bit loads and stores.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_kernel(
    x_ptr,  # pointer to the input
    out_ptr,  # pointer to the output
    n_elements,  # number of elements of input and output
    BLOCK_SIZE: tl.constexpr,
):
    # 64-bit offsets: the tensor holds 1.6e9 elements
    block_start = tl.program_id(0).to(tl.int64) * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0, eviction_policy="evict_first")
    out = tl.maximum(x, 0.0)
    tl.store(out_ptr + offsets, out, mask=mask)


def triton_relu(x: torch.Tensor) -> torch.Tensor:
    assert x.is_cuda, "Tensors must be on CUDA."
    x = x.contiguous()
    out = torch.empty_like(x)
    n_elements = x.numel()
    BLOCK_SIZE = 4096
    grid = (triton.cdiv(n_elements, BLOCK_SIZE),)
    relu_kernel[grid](x, out, n_elements, BLOCK_SIZE=BLOCK_SIZE, num_warps=8)
    return out


class ModelNew(nn.Module):
    def __init__(self) -> None:
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_relu(x)
