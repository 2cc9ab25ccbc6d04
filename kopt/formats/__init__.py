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
