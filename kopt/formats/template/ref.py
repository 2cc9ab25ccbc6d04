"""The reference of this workspace (kopt init's template: a float32 vector add, to edit).

setup() makes one input set from the seed and the config's fields (target.yaml's configs), on the
benchmark's device (kernel-opt makes it torch's default device: no device= needed). "inputs" are
handed to every kernel by name; "outputs" name the buffers the kernels write (here `out`, made with
torch.empty: kernel-opt fills it with NaN before every call, so an unwritten element is caught).
reference() computes the expected outputs from the same inputs: kernel-opt runs it in float64 where
it can, and compares each output within target.yaml's tolerances.
"""

import torch


def setup(seed, n):
    torch.manual_seed(seed)
    x = torch.randn(n, dtype=torch.float32)
    y = torch.randn(n, dtype=torch.float32)
    out = torch.empty(n, dtype=torch.float32)
    return {"inputs": {"x": x, "y": y, "out": out, "n": n}, "outputs": ["out"]}


def reference(x, y, out, n):
    out.copy_(x + y)


def bytes_moved(n):
    """Compulsory DRAM traffic per call: x and y read, out written (the roofline's bandwidth side)."""
    return 3 * 4 * n


def flops(n):
    return n
