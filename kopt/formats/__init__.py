"""The formats users bring, made into kernel-opt workspaces (`kopt init`): KernelBench problems,
a repository and its benchmark command, or a workspace to edit."""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path


@contextlib.contextmanager
def staged(dest: Path, check=None):
    """A new workspace written whole or not at all: a staging folder beside ``dest`` (with its
    ``kernels/``), checked by ``check(folder)`` (the workspace loader, from the command line: what
    the graph will read), then moved to ``dest``; removed if anything raised."""
    dest = dest.resolve()
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ValueError(f"{dest}: exists and is not an empty folder; kopt init writes a new workspace")
    staging = dest.with_name(f".{dest.name}.kopt-init-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        (staging / "kernels").mkdir(parents=True)
        yield staging
        if check is not None:
            check(staging)
        if dest.exists():  # an empty folder, perhaps the shell's own: filled, not replaced
            for child in staging.iterdir():
                child.rename(dest / child.name)
        else:
            dest.parent.mkdir(parents=True, exist_ok=True)
            staging.rename(dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def host_available_bytes() -> int:
    """The host's memory available to a new allocation (MemAvailable: free pages and the cache that
    can be given back), for init's runs at a problem's own sizes and the judge's references
    (kopt.measure.reference.available_bytes); very large where /proc/meminfo cannot be read."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 1 << 62  # unknown: do not refuse


def set_tf32(on: bool) -> None:
    """torch's TF32 switches (float32 matmuls and convolutions at TF32's 10-bit mantissa, which
    torch's convolutions use by default): off in the judge's process, for its float32 references
    (the bound's checks on the GPU, a reference too big for float64); in the kernel's process, off
    unless target.yaml's ``tf32`` (kopt.inside.serve); off for init's run of a KernelBench Model
    at its own sizes on a GPU, as v0's gate runs it."""
    import torch  # here: the formats' other helpers need no torch

    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on
    torch.set_float32_matmul_precision("high" if on else "highest")
