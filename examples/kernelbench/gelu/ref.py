"""GELU (the exact, erf form) of x: the shape of KernelBench's level-1 problem 26, 4096×393216
fp32 (6.4 GB). The reference returns y; kernels get it as ``y`` and write it in place."""

import torch


def setup(seed, M, N, dtype="float32"):
    torch.manual_seed(seed)
    return {"inputs": {"x": torch.rand(M, N, dtype=getattr(torch, dtype))}, "outputs": ["y"]}


def reference(x):
    return torch.nn.functional.gelu(x)


def bytes_moved(M, N, dtype="float32"):
    return 2 * M * N * torch.tensor([], dtype=getattr(torch, dtype)).element_size()


def flops(M, N, dtype="float32"):
    """About 8 operations per element (erf counted as a few)."""
    return 8 * M * N
