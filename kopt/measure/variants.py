"""Importing a Python file, and ref.py (trusted side). The versions' loaders run only inside the
kernel's process (kopt.inside.kernels)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

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


def load_reference(path: str | Path):
    mod = import_file(path, "kopt_reference")
    for fn in ("setup", "reference"):
        if not callable(getattr(mod, fn, None)):
            raise KernelFault(f"{path}: defines no {fn}() function")
    from kopt.measure.reference import setup_takes_seed

    why = setup_takes_seed(mod.setup)
    if why:
        raise KernelFault(f"{path}: {why}")
    return mod
