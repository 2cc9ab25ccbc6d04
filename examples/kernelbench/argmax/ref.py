"""Argmax over dim 1 of x (B, D1, D2): the shape of KernelBench's level-1 problem 51. The
reference returns an int64 tensor (B, D2); kernels get it as ``idx`` and write it in place."""

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


def setup(seed, B, D1, D2, dtype="float32"):
    torch.manual_seed(seed)
    return {"inputs": {"x": torch.rand(B, D1, D2, dtype=DTYPES[dtype])}, "outputs": ["idx"]}


def reference(x):
    return torch.argmax(x, dim=1)


def bytes_moved(B, D1, D2, dtype="float32"):
    """x read once, idx written once."""
    return B * D1 * D2 * torch.tensor([], dtype=DTYPES[dtype]).element_size() + B * D2 * 8
