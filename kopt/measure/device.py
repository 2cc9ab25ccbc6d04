"""Torch helpers of both sides of the boundary: the device, poisoning, bitwise equality. The judge
binds what it uses at import time; the kernel's process has its own copy of this module, which
the kernel may patch there without reaching the judge's.
"""

from __future__ import annotations

import contextlib
import gc
import os

import torch

from kopt.measure.faults import HarnessFault, KernelFault

_equal = torch.equal

# what a timed call costs the GPU besides the kernel, on both sides of the boundary: the L2 flush
# buffer the kernel's process writes before each call, and its spin kernel (about 0.25 ms at 2 GHz)
L2_FLUSH_BYTES = 256 * 1024 * 1024
SPIN_CYCLES = 500_000


def select_device(requested: str) -> str:
    if requested == "auto":
        requested = "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise KernelFault("config device=cuda, but torch sees no GPU on this machine")
    if requested == "cuda" and os.environ.get("KOPT_GPU_UUID"):
        check_binding(os.environ["KOPT_GPU_UUID"])
    return requested


def check_binding(claimed: str) -> None:
    """The GPU this process computes on is the one the gate claimed (nvidia-smi's ``GPU-<uuid>``):
    a binding set after CUDA started would be ignored, and two jobs could share a GPU. A MIG
    instance has a UUID of its own, so it is not checked."""
    got = getattr(torch.cuda.get_device_properties(0), "uuid", None)
    if got is None or "MIG" in torch.cuda.get_device_name(0):
        return
    if str(got).lower() != claimed.lower().removeprefix("gpu-"):
        raise HarnessFault(
            f"this process computes on GPU {got}, not on {claimed}, which the gate claimed for it "
            "(CUDA_VISIBLE_DEVICES was set too late?)"
        )


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def poison(t: torch.Tensor) -> None:
    """Fill an output so that any element the kernel does not write is caught."""
    if t.is_complex():
        t.fill_(complex(float("nan"), float("nan")))  # both parts: a kernel writing only .real is caught
    elif t.is_floating_point():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).max)


def bytes_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality (NaN-safe), for the input-mutation check."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return _equal(a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8))


@contextlib.contextmanager
def paused_gc():
    """Python's garbage collector off while the bound's batch is timed, on both sides (the judge's
    kopt.measure.bound, the kernel process's kopt.inside.serve): a collection there is milliseconds
    of an idle GPU inside the judge's clock, and no work of the kernel's."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
