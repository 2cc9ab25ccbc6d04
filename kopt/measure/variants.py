"""Variant kinds: turn a version's source file into a callable that writes the outputs in place.

Correctness, timing and (later) profiling only ever see ``load_variant(path) -> callable``.
Triton ``.py`` files are the one kind today; CUDA ``.cu`` (compiled, called through ``solve``)
and external benchmark commands will register further loaders in ``LOADERS``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Callable

from kopt.measure.faults import KernelFault


def import_file(path: str | Path, name: str):
    path = Path(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise KernelFault(f"{path}: cannot be imported as a Python module")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as e:
        raise KernelFault(f"{path}: line {e.lineno}: SyntaxError: {e.msg}") from None
    except Exception as e:
        raise KernelFault(f"{path}: import failed: {type(e).__name__}: {e}") from e
    return mod


def _triton_py(path: Path) -> Callable[..., None]:
    mod = import_file(path, f"kopt_variant_{path.stem}_{abs(hash(str(path.resolve()))) % 10**8}")
    fn = getattr(mod, "run_kernel", None)
    if not callable(fn):
        raise KernelFault(f"{path}: defines no run_kernel(**inputs) function")
    return fn


class Dispatcher:
    """A split version: routes each config to an earlier version's kernel (kernels/vN.yaml
    ``dispatch``). The harness calls ``select(config)`` before it runs a config."""

    def __init__(self, path: Path):
        import yaml

        from kopt.workspace.target import route_for

        self.path = path
        self.routes = (yaml.safe_load(path.read_text()) or {}).get("dispatch") or []
        self._route_for = route_for
        self.kernels: dict[str, Callable[..., None]] = {}
        for r in self.routes:
            if r["use"] not in self.kernels:
                py, yml = path.parent / f"{r['use']}.py", path.parent / f"{r['use']}.yaml"
                self.kernels[r["use"]] = load_variant(py if py.is_file() else yml)
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


def select_config(kernel, cfg: dict) -> None:
    """Tell a dispatching kernel which config comes next (a no-op for plain kernels)."""
    sel = getattr(kernel, "select", None)
    if callable(sel):
        sel(cfg)


LOADERS: dict[str, Callable[[Path], Callable[..., None]]] = {".py": _triton_py, ".yaml": _dispatch_yaml}


def load_variant(path: str | Path) -> Callable[..., None]:
    path = Path(path)
    loader = LOADERS.get(path.suffix)
    if loader is None:
        raise KernelFault(f"{path}: unknown variant kind '{path.suffix}' (known: {sorted(LOADERS)})")
    return loader(path)


def load_reference(path: str | Path):
    mod = import_file(path, "kopt_reference")
    for fn in ("setup", "reference"):
        if not callable(getattr(mod, fn, None)):
            raise KernelFault(f"{path}: defines no {fn}() function")
    return mod


BASELINES = ("eager", "compile")


class TorchBaseline:
    """The reference itself as the kernel: called as its users call it, with setup()'s inputs only
    (a returning reference allocates its outputs inside the timed call, as in real use)."""

    kopt_reference = True

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
