"""The formats users bring, made into kernel-opt workspaces (`kopt init`): KernelBench problems,
a repository and its benchmark command, or a workspace to edit."""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path


@contextlib.contextmanager
def staged(dest: Path):
    """A new workspace written whole or not at all: a staging folder beside ``dest`` (with its
    ``kernels/``), moved to ``dest`` once the block has written it, removed if it raised."""
    if dest.exists() and any(dest.iterdir()):
        raise ValueError(f"{dest}: exists and is not empty; kopt init writes a new workspace")
    staging = dest.with_name(f".{dest.name}.kopt-init")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        (staging / "kernels").mkdir(parents=True)
        yield staging
        dest.parent.mkdir(parents=True, exist_ok=True)
        if dest.exists():
            dest.rmdir()
        staging.rename(dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
