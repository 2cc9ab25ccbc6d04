"""Torch helpers shared by the checked calls (imported in child processes only): the device,
poisoning, bitwise equality, and ``Guard``, which fails a kernel that patches timing or checking
functions or leaves threads running. The checks bind what they use at import time, before any
kernel module is imported.
"""

from __future__ import annotations

import os
import threading
import time

import torch

from kopt.measure.faults import HarnessFault, KernelFault

_equal = torch.equal


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


class Guard:
    """Detects a kernel that patches timing or checking functions, or leaves threads running."""

    WATCHED = [
        (time, "perf_counter"),
        (time, "perf_counter_ns"),
        (time, "monotonic"),
        (time, "time"),
        (torch, "isclose"),
        (torch, "isnan"),
        (torch, "equal"),
        (torch, "eq"),
        (torch.Tensor, "all"),
        (torch.Tensor, "fill_"),
        (torch.Tensor, "zero_"),
        (torch.Tensor, "copy_"),
        (torch.cuda, "synchronize"),
        (torch.cuda, "Event"),
        (torch.cuda.Event, "record"),
        (torch.cuda.Event, "elapsed_time"),
        (torch.cuda.Event, "synchronize"),
        (torch.cuda, "current_stream"),
    ]

    def __init__(self, extra_modules=(), allow_threads: bool = False):
        self.allow_threads = allow_threads
        self.items = [(o, a, getattr(o, a)) for o, a in self.WATCHED]
        for mod in extra_modules:
            for name, val in list(vars(mod).items()):
                if callable(val) and not name.startswith("__"):
                    self.items.append((mod, name, val))
        self.threads = threading.active_count()

    def check(self, where: str) -> None:
        for obj, attr, val in self.items:
            if getattr(obj, attr, None) is not val:
                owner = getattr(obj, "__name__", type(obj).__name__)
                raise KernelFault(f"{where}: the kernel replaced {owner}.{attr}; timing and checks cannot be trusted")
        if not self.allow_threads and threading.active_count() > self.threads:
            names = [t.name for t in threading.enumerate()][-3:]
            raise KernelFault(
                f"{where}: the kernel left a background thread running ({names}); work outside the call cannot be timed"
            )
