"""RMSNorm over the last dimension, written in place: y = x / sqrt(mean(x^2) + eps) * w.

The in-place style of the published skill template: setup() allocates the output ``y`` with
torch.empty among the inputs (its contents are never read: the kernels find it poisoned) and
reference() writes it. setup() takes the seed by keyword, after the config's columns.
"""

import torch

EPS = 1e-6


def setup(M, N, dtype="float32", seed=0):
    torch.manual_seed(seed)
    dt = getattr(torch, dtype)
    x = torch.randn(M, N, dtype=dt)
    w = torch.rand(N, dtype=dt) + 0.5
    y = torch.empty(M, N, dtype=dt)
    return {"inputs": {"x": x, "w": w, "y": y, "eps": EPS}, "outputs": ["y"]}


def reference(x, w, y, eps):
    rms = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps)
    y.copy_(x * rms * w)


def bytes_moved(M, N, dtype="float32"):
    """x read and y written once, w once."""
    return (2 * M * N + N) * torch.tensor([], dtype=getattr(torch, dtype)).element_size()


def flops(M, N, dtype="float32"):
    """A square and an add per element for the mean, two multiplies for the output."""
    return 4 * M * N
