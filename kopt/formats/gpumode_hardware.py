"""What hardware a gpu-mode problem needs, said in one line at ``kopt init --gpumode`` where this
machine cannot judge it (issue 43): a multi-GPU problem (``multi_gpu: true`` in its task.yml, or a
competition GPU such as ``MI300x8``), an FP4 problem without FP4 tensor cores, and one whose files
import a module not installed here (AMD's aiter, NVIDIA's cuda-python), named with the hardware
its competition ran it on.

The competition's GPUs come from the file beside the problems' folder that lists it
(``problems/amd.yaml``: ``directory: amd/moe``, ``gpus: [MI300]``).
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
from pathlib import Path

import yaml

# module -> how to get it, where the name to pip differs or pip has none
INSTALL = {
    "cuda": "pip install cuda-python",
    "cutlass": "pip install nvidia-cutlass-dsl",
    "aiter": "AMD's aiter, built for ROCm (github.com/ROCm/aiter)",
}


def competition_gpus(folder: Path) -> list[str]:
    """The GPUs the problem's competition lists for it; none where no such file is found."""
    listing = folder.parent.parent / f"{folder.parent.name}.yaml"
    try:
        doc = yaml.safe_load(listing.read_text())
    except (OSError, yaml.YAMLError):
        return []
    for p in (doc or {}).get("problems") or [] if isinstance(doc, dict) else []:
        if isinstance(p, dict) and str(p.get("directory", "")).strip("/") == f"{folder.parent.name}/{folder.name}":
            return [str(g) for g in p.get("gpus") or []]
    return []


def _hardware(folder: Path, gpus: list[str]) -> str:
    if "fp4" in folder.name.lower():
        return "FP4 tensor cores (NVIDIA Blackwell, B200; AMD MI355X)"
    if gpus and all(g.upper().startswith("MI") for g in gpus):
        return f"an AMD Instinct GPU with ROCm ({', '.join(gpus)})"
    return ", ".join(gpus) or "its competition's GPU"


def _fp4_here() -> bool:
    import torch

    if torch.cuda.is_available():
        if getattr(torch.version, "hip", None):
            return "gfx95" in torch.cuda.get_device_properties(0).gcnArchName
        return torch.cuda.get_device_capability(0) >= (10, 0)
    return False


def missing_modules(files: list[Path], folder: Path) -> list[str]:
    """Top-level modules the files import that are neither installed nor the problem's own."""
    own = {p.stem for p in folder.glob("*.py")} | {"task", "utils", "reference", "submission"}
    names: list[str] = []
    for f in files:
        try:
            tree = ast.parse(f.read_text())
        except (OSError, SyntaxError):
            continue  # said elsewhere, naming the file
        for n in ast.walk(tree):
            if isinstance(n, ast.Import):
                names += [a.name.split(".")[0] for a in n.names]
            elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
                names.append(n.module.split(".")[0])
    return [
        m
        for m in dict.fromkeys(names)
        if m not in own and m not in sys.stdlib_module_names and importlib.util.find_spec(m) is None
    ]


def unjudgeable(folder: Path, task: dict, files: list[Path]) -> str | None:
    """One line where this machine cannot judge the problem (the module's docstring); else None."""
    gpus = competition_gpus(folder)
    listed = f" (its competition ran it on {', '.join(gpus)})" if gpus else ""
    if task.get("multi_gpu") or any(re.search(r"x\d+$", g) for g in gpus):
        return (
            f"{folder / 'task.yml'}: a multi-GPU problem{listed}: kernel-opt judges one GPU's kernels, "
            "so it makes no workspace of it"
        )
    missing = missing_modules(files, folder)
    if missing:
        how = "; ".join(INSTALL.get(m, f"pip install {m}") for m in missing)
        return (
            f"{folder}: its files import {', '.join(missing)}, not installed here ({how}); it needs "
            f"{_hardware(folder, gpus)}{listed if 'fp4' in folder.name.lower() else ''}"
        )
    if "fp4" in folder.name.lower() and not _fp4_here():
        return f"{folder}: an FP4 problem: it needs {_hardware(folder, gpus)}{listed}, which this machine lacks"
    return None
