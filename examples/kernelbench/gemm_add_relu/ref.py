"""relu(x @ weight.T + bias): the shape of KernelBench's level-2 problem 76 (Gemm + Add + ReLU),
x (M, K), weight (N, K) as nn.Linear keeps it, bias (N). The reference returns out (M, N)."""

import math

import torch


def setup(seed, M, N, K, dtype="float32"):
    torch.manual_seed(seed)
    dt = getattr(torch, dtype)
    x = torch.rand(M, K, dtype=dt)
    weight = ((torch.rand(N, K) * 2 - 1) / math.sqrt(K)).to(dt)  # nn.Linear's initial range
    bias = torch.randn(N).to(dt)
    return {"inputs": {"x": x, "weight": weight, "bias": bias}, "outputs": ["out"]}


def reference(x, weight, bias):
    return torch.relu(x @ weight.T + bias)


def flops(M, N, K, dtype="float32"):
    return 2 * M * N * K


def bytes_moved(M, N, K, dtype="float32"):
    size = torch.tensor([], dtype=getattr(torch, dtype)).element_size()
    return (M * K + N * K + N + M * N) * size
