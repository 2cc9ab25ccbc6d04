"""Torch helpers shared by the correctness check and the timer (imported in child processes only).

The helpers are bound at import time (``_isclose = torch.isclose`` ...), before any kernel module
is imported, so a kernel that patches torch afterwards cannot change what the checks compute;
``Guard`` also detects such patching and fails the version.
"""

from __future__ import annotations

import threading
import time
import zlib
from dataclasses import dataclass
from typing import Any

import torch

from .variants import KernelFault

_isclose = torch.isclose
_isnan = torch.isnan
_isinf = torch.isinf
_tensor_all = torch.Tensor.all
_perf_counter = time.perf_counter


def select_device(requested: str) -> str:
    if requested == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if requested == "cuda" and not torch.cuda.is_available():
        raise KernelFault("config device=cuda, but torch sees no GPU on this machine")
    return requested


def seed_for(cfg_key: str, i: int) -> int:
    """Deterministic, per-config seeds: reruns reproduce, and no two configs share data."""
    return (zlib.crc32(cfg_key.encode()) + 7919 * i) % (2**31)


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


@dataclass
class Case:
    inputs: dict[str, Any]  # tensors on the device (outputs included) and scalars
    outputs: list[str]
    expected: dict[str, torch.Tensor]  # float64 (or exact dtype for integer outputs)


def make_case(ref, cfg: dict, seed: int, device: str) -> Case:
    try:
        with torch.device(device):  # tensors are created where they are used
            data = ref.setup(seed, **cfg)
        inputs, outputs = data["inputs"], list(data["outputs"])
    except Exception as e:
        raise KernelFault(f"ref.py: setup(seed={seed}, **{cfg}) failed: {type(e).__name__}: {e}") from e
    for o in outputs:
        if not isinstance(inputs.get(o), torch.Tensor):
            raise KernelFault(f"ref.py: setup() lists output '{o}', which is not a tensor in 'inputs'")
    inputs = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()}
    return Case(inputs, outputs, reference64(ref, inputs, outputs))


def reference64(ref, inputs: dict, outputs: list[str]) -> dict[str, torch.Tensor]:
    """Run the reference on float64 copies of the floating inputs; return its outputs."""
    args = {}
    for k, v in inputs.items():
        if isinstance(v, torch.Tensor):
            args[k] = v.detach().to(torch.float64) if v.is_floating_point() else v.detach().clone()
        else:
            args[k] = v
    try:
        with torch.no_grad():
            ref.reference(**args)
    except Exception as e:
        raise KernelFault(f"ref.py: reference() failed: {type(e).__name__}: {e}") from e
    return {o: args[o] for o in outputs}


def poison(t: torch.Tensor) -> None:
    """Fill an output so that any element the kernel does not write is caught."""
    if t.is_floating_point() or t.is_complex():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(torch.iinfo(t.dtype).max)


def poison_outputs(case: Case) -> None:
    for o in case.outputs:
        poison(case.inputs[o])


def bytes_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality (NaN-safe), for the input-mutation check."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    return torch.equal(a.contiguous().view(torch.uint8), b.contiguous().view(torch.uint8))


def compare(out: torch.Tensor, exp: torch.Tensor, atol: float, rtol: float) -> dict:
    """Errors of ``out`` against the float64 ``exp``; ``ok`` under |d| <= atol + rtol*|exp|."""
    o = out.detach().to(torch.float64)
    e = exp.to(o.device)
    bad_nan = int((_isnan(o) & ~_isnan(e)).sum())
    bad_inf = int((_isinf(o) & ~_isinf(e)).sum())
    close = _isclose(o, e, rtol=rtol, atol=atol, equal_nan=True)
    n_bad = int((~close).sum())
    finite = torch.isfinite(o) & torch.isfinite(e)
    d = (o - e).abs().where(finite, torch.zeros((), dtype=o.dtype, device=o.device))
    max_abs = float(d.max()) if d.numel() else 0.0
    rel = d / e.abs().clamp_min(torch.finfo(torch.float64).tiny)
    max_rel = float(rel.where(e.abs() > atol, torch.zeros((), dtype=o.dtype, device=o.device)).max()) if d.numel() else 0.0
    reason = None
    if out.shape != exp.shape:
        reason = f"shape {tuple(out.shape)} != reference {tuple(exp.shape)}"
    elif bad_nan:
        reason = f"{bad_nan} of {o.numel()} elements are NaN where the reference is not (unwritten or invalid)"
    elif bad_inf:
        reason = f"{bad_inf} of {o.numel()} elements are inf where the reference is finite"
    elif n_bad:
        idx = int((~close).flatten().nonzero()[0])
        reason = (
            f"{n_bad} of {o.numel()} elements outside atol={atol:g}, rtol={rtol:g} "
            f"(first at flat index {idx}: got {float(o.flatten()[idx]):.6g}, expected {float(e.flatten()[idx]):.6g})"
        )
    return {"ok": reason is None, "max_abs": max_abs, "max_rel": max_rel, "reason": reason}


def outputs_close(case: Case, atol: float, rtol: float) -> bool:
    """Fast pass/fail of the current outputs (used after every timed call)."""
    for o in case.outputs:
        out = case.inputs[o]
        exp = case.expected[o]
        if not bool(_tensor_all(_isclose(out.to(torch.float64), exp, rtol=rtol, atol=atol, equal_nan=True))):
            return False
    return True


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
                f"{where}: the kernel left a background thread running ({names}); "
                "work outside the call cannot be timed"
            )
