"""A CUDA (.cu) or HIP (.hip) version: its ``extern "C" void solve(...)``, called through ctypes
from the shared library rule `build` made.

solve's parameters take what setup() gives, in its order: the inputs, then the outputs the harness
allocates, then the config's numeric values not already among them (softmax's ``x, y, M, N``).
Tensors go as device pointers of the matching element type, ints and floats as the C scalar the
parameter names. Every call is checked before solve runs: a parameter whose type, position or
count does not match is one line naming it. solve must launch on the default stream, the stream
the harness times: work on a stream of its own escapes the events, and the harness's comparison of
the profiler's GPU time (all streams) with the events fails such a version, as it does a Triton
kernel's. One that synchronises inside keeps its profiler time; its rows are marked host-bound
(kopt.measure.timing.event_time_us).
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import torch

from kopt.measure.faults import KernelFault
from kopt.workspace.cuda_source import Param, SignatureError, solve_params

SCALARS = {
    "int32": ctypes.c_int32,
    "uint32": ctypes.c_uint32,
    "int64": ctypes.c_int64,
    "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float,
    "float64": ctypes.c_double,
}


def _check(path: Path, i: int, p: Param, name: str, value: Any, order: list[str]) -> None:
    """One parameter's type against the value in its position; a mismatch raises one line naming it."""
    where = f"{path}: solve parameter {i + 1} '{p.name}'"
    if p.name != name and p.name in order:
        raise KernelFault(f"{where} receives '{name}': setup's order is {', '.join(order)}")
    if p.pointer:
        if not isinstance(value, torch.Tensor):
            raise KernelFault(f"{where} is a pointer ({p.describe()}) but '{name}' is {type(value).__name__} {value!r}")
        if p.dtype is not None and value.dtype != getattr(torch, p.dtype):
            raise KernelFault(f"{where} is {p.describe()} but '{name}' holds {str(value.dtype).removeprefix('torch.')}")
        return
    if isinstance(value, (torch.Tensor, bool)) or not isinstance(value, (int, float)):
        raise KernelFault(f"{where} is a scalar ({p.describe()}) but '{name}' is {type(value).__name__}")
    if isinstance(value, float) and not p.dtype.startswith("float"):
        raise KernelFault(f"{where} is {p.describe()} but '{name}' is the float {value}")


def _usable(path: Path, i: int, p: Param, name: str, value: Any) -> None:
    """A tensor solve can take as one pointer: on the GPU and contiguous."""
    if not isinstance(value, torch.Tensor):
        return
    if value.device.type != "cuda":
        raise KernelFault(f"{path}: solve parameter {i + 1} '{p.name}': '{name}' is on {value.device}, not on the GPU")
    if not value.is_contiguous():
        raise KernelFault(
            f"{path}: solve parameter {i + 1} '{p.name}': '{name}' is not contiguous (one pointer, no strides)"
        )


class CudaSolve:
    """The callable the harness sees: ``kernel(**inputs_and_outputs)`` binds them to solve()."""

    def __init__(self, path: Path, library: str):
        self.path = path
        try:
            self.params = solve_params(path)
        except SignatureError as e:
            raise KernelFault(str(e)) from None
        try:
            self.solve = ctypes.CDLL(str(Path(library).resolve())).solve
        except (OSError, AttributeError) as e:
            raise KernelFault(f"{path}: its library {library} does not load or has no solve: {e}") from None
        self.solve.restype = None
        self.solve.argtypes = [ctypes.c_void_p if p.pointer else SCALARS[p.dtype] for p in self.params]
        self.config: dict = {}
        self.__globals__: dict = {}  # no Triton kernels to report

    def select(self, cfg: dict) -> None:
        """The next config: its numeric values follow the tensors among solve's arguments."""
        self.config = dict(cfg)

    def arguments(self, given: dict[str, Any]) -> list:
        """solve's arguments from setup()'s values in order, each checked against its parameter."""
        numbers = {k: v for k, v in self.config.items() if k not in given and isinstance(v, (int, float))}
        values = [*given.items(), *((k, v) for k, v in numbers.items() if not isinstance(v, bool))]
        order = [n for n, _ in values]
        if len(values) != len(self.params):
            got = ", ".join(order)
            want = ", ".join(p.describe() for p in self.params)
            raise KernelFault(
                f"{self.path}: solve takes {len(self.params)} parameters ({want}); setup gives {len(values)}: {got}"
            )
        for i, (p, (name, value)) in enumerate(zip(self.params, values, strict=True)):
            _check(self.path, i, p, name, value, order)
        for i, (p, (name, value)) in enumerate(zip(self.params, values, strict=True)):
            _usable(self.path, i, p, name, value)
        return [v.data_ptr() if isinstance(v, torch.Tensor) else v for _, v in values]

    def __call__(self, **given) -> None:
        self.solve(*self.arguments(given))


def load(path: Path, built: dict[str, str]) -> CudaSolve:
    """The version's solve, from the library its build made (``built``: kernel file -> library)."""
    library = built.get(str(path.resolve()))
    if library is None:
        raise KernelFault(f"{path}: has no built library (rule build did not make one for it)")
    return CudaSolve(path, library)
