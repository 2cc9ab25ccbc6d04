"""Variant kinds, loaded inside the kernel's process only: a version's source file becomes a
callable that writes the outputs in place.

Triton ``.py`` files (``run_kernel``), CUDA ``.cu`` and HIP ``.hip`` files (``solve`` in the library
their build made, kopt.inside.cuda), dispatching ``.yaml`` versions, one loader each in ``LOADERS``,
and the torch baselines (the reference itself, run as its users call it). The judge never imports
this module: it never runs a version's code.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Callable

from kopt.measure.faults import KernelFault
from kopt.measure.variants import import_file


def _triton_py(path: Path) -> Callable[..., None]:
    from kopt.formats.gpumode import custom_kernel, on_path, problem_folder
    from kopt.formats.kernelbench import model_new_kernel

    folder = problem_folder(path)  # a gpu-mode submission imports the problem's task.py
    with on_path(folder) if folder else contextlib.nullcontext():
        mod = import_file(path, f"kopt_variant_{path.stem}_{abs(hash(str(path.resolve()))) % 10**8}")
    fn = getattr(mod, "run_kernel", None)
    if callable(fn):
        return fn
    # a KernelBench solution or a gpu-mode submission, in its problem's workspace
    fn = model_new_kernel(mod, path) or custom_kernel(mod, path)
    if fn is None:
        raise KernelFault(
            f"{path}: defines no run_kernel(**inputs) function (nor a KernelBench ModelNew, nor a gpu-mode custom_kernel)"
        )
    return fn


class Dispatcher:
    """A split version: routes each config to an earlier version's kernel (kernels/vN.yaml
    ``dispatch``). The harness calls ``select(config)`` before it runs a config."""

    def __init__(self, path: Path):
        import yaml

        from kopt.workspace.target import route_for, version_kernel

        self.path = path
        self.routes = (yaml.safe_load(path.read_text()) or {}).get("dispatch") or []
        self._route_for = route_for
        self.kernels: dict[str, Callable[..., None]] = {}
        for r in self.routes:
            if r["use"] not in self.kernels:
                self.kernels[r["use"]] = load_variant(version_kernel(path.parent, r["use"]))
        self.current: Callable[..., None] | None = None
        self.__globals__: dict = {}  # for profiling: the Triton kernels of every routed version
        for k in self.kernels.values():
            self.__globals__.update(getattr(k, "__globals__", {}))

    def select(self, cfg: dict) -> str:
        use = self._route_for(self.routes, cfg)
        self.current = self.kernels[use]
        if hasattr(self.current, "select"):
            self.current.select(cfg)
        return use

    def __call__(self, **inputs) -> None:
        if self.current is None:
            raise KernelFault(f"{self.path}: dispatch called before a config was selected")
        self.current(**inputs)


def _dispatch_yaml(path: Path) -> Callable[..., None]:
    return Dispatcher(path)


# a CUDA/HIP kernel file (resolved) -> the shared library its build made; the kernel's process sets it from the judge's order
BUILT: dict[str, str] = {}


def _compiled(path: Path) -> Callable[..., None]:
    from kopt.inside import cuda

    return cuda.load(path, BUILT)


def select_config(kernel, cfg: dict) -> None:
    """Tell a dispatching kernel which config comes next (a no-op for plain kernels)."""
    sel = getattr(kernel, "select", None)
    if callable(sel):
        sel(cfg)


LOADERS: dict[str, Callable[[Path], Callable[..., None]]] = {
    ".py": _triton_py,
    ".cu": _compiled,
    ".hip": _compiled,
    ".yaml": _dispatch_yaml,
}


def load_variant(path: str | Path) -> Callable[..., None]:
    path = Path(path)
    loader = LOADERS.get(path.suffix)
    if loader is None:
        raise KernelFault(f"{path}: unknown variant kind '{path.suffix}' (known: {sorted(LOADERS)})")
    return loader(path)


BASELINES = ("eager", "compile")


class TorchBaseline:
    """The reference itself as the kernel: called as its users call it, with setup()'s inputs only
    (a returning reference allocates its outputs inside the timed call, as in real use). Whether a
    call is a baseline's comes from the parent's request (``torch:<impl>``), never from the kernel:
    the child sets ``torch_baseline`` in the options (kopt.measure.child._opts)."""

    def __init__(self, fn: Callable, impl: str):
        self.fn, self.impl = fn, impl
        self.__globals__ = getattr(fn, "__globals__", {})

    def __call__(self, **inputs):
        return self.fn(**inputs)


def torch_baseline(ref, impl: str) -> TorchBaseline:
    """The reference as ``eager`` (plain PyTorch) or ``compile`` (torch.compile), timed by the same
    harness as the variants, for the reports' "against torch" columns."""
    if impl == "eager":
        return TorchBaseline(ref.reference, impl)
    if impl == "compile":
        import torch

        return TorchBaseline(torch.compile(ref.reference), impl)
    raise KernelFault(f"unknown torch baseline '{impl}' (known: {list(BASELINES)})")
