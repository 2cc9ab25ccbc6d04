"""Row softmax: y = softmax(x, dim=-1). The reference of the bundled kernel-opt example.

kernel-opt calls setup() with the benchmark device as torch's default device, so the tensors
below are created where they will be used (no host-to-device copy of 512 MB inputs). The
kernels are called as run_kernel(x=x, y=y) and write y in place.
"""

import torch

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def setup(seed, M, N, dtype="float32"):
    torch.manual_seed(seed)
    x = (torch.randn(M, N, dtype=torch.float32) * 3.0).to(DTYPES[dtype])
    return {"inputs": {"x": x}, "outputs": ["y"]}


def reference(x):
    """Returns y, as users call torch: the harness allocates the kernels' y from its shape and
    dtype, and the torch baselines are timed with their own allocation and no extra copy."""
    return torch.softmax(x, dim=-1)


def bytes_moved(M, N, dtype="float32"):
    """Compulsory DRAM traffic: x read once, y written once."""
    return 2 * M * N * torch.tensor([], dtype=DTYPES[dtype]).element_size()


def flops(M, N, dtype="float32"):
    """max, subtract, exp, sum, scale: about 5 operations per element."""
    return 5 * M * N
