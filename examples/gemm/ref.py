"""C = A @ B: a bf16 matrix multiply with fp32 accumulation, the compute-bound example.

A is (M, K) and B is (K, N), both row-major; the kernels write C (M, N) in the inputs' dtype.
B is scaled by 1/sqrt(K) so every entry of C is of order one whatever K is. kernel-opt calls
setup() with the benchmark device as torch's default device.
"""

import math

import torch

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def setup(seed, M, N, K, shape, dtype="bfloat16"):
    torch.manual_seed(seed)
    a = torch.randn(M, K, dtype=torch.float32).to(DTYPES[dtype])
    b = (torch.randn(K, N, dtype=torch.float32) / math.sqrt(K)).to(DTYPES[dtype])
    return {"inputs": {"a": a, "b": b}, "outputs": ["c"]}


def reference(a, b):
    """Returns C, as users call torch (torch.matmul, cuBLAS on a GPU)."""
    return a @ b


def flops(M, N, K, shape, dtype="bfloat16"):
    return 2 * M * N * K


def bytes_moved(M, N, K, shape, dtype="bfloat16"):
    """Compulsory DRAM traffic: A and B read once, C written once."""
    return (M * K + K * N + M * N) * torch.tensor([], dtype=DTYPES[dtype]).element_size()
