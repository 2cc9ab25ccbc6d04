"""SASS listings by cuobjdump, started by the trusted side (not under Nsight Compute), in the
kernel's sandbox.

Of a CUDA build's library (rule `build`) and of the cubins of a Triton version's compiled
specialisations, which the kernel's process writes and the judge copies (rule `profile`). Not in the kernel's process: under Nsight Compute, which follows every program its
target starts, each cuobjdump there paid Nsight Compute's per-process set-up.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def tool(compiler: str | None = None) -> str | None:
    """cuobjdump next to nvcc (``compiler``), on PATH, or Triton's own; None when there is none."""
    tools = [Path(compiler).parent / "cuobjdump" if compiler else None, shutil.which("cuobjdump")]
    spec = importlib.util.find_spec("triton")
    if spec and spec.origin:
        tools.append(Path(spec.origin).parent / "backends" / "nvidia" / "bin" / "cuobjdump")
    return next((str(t) for t in tools if t and Path(t).is_file()), None)


def disassemble(binary: Path, out: Path, compiler: str | None = None) -> str | None:
    """``binary``'s SASS (a library or a cubin) written to ``out``; its name, or None when there is
    no cuobjdump or it could not read the file. cuobjdump runs in the kernel's sandbox
    (kopt.inside.confined, by its module name: the judge imports nothing of that side): the file
    may be the kernel's process's making."""
    found = tool(compiler)
    if found is None:
        return None
    home = out.parent / f".confined-{out.name}"  # its own: several run at once (``cubins_to_sass``)
    confined = [sys.executable, "-m", "kopt.inside.confined", str(home)]
    try:
        r = subprocess.run([*confined, found, "-sass", str(binary)], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if r.returncode != 0:
        return None
    out.write_text(r.stdout)
    return out.name


def cubins_to_sass(folder: Path) -> dict[str, str]:
    """Every ``*.cubin`` in ``folder`` replaced by its ``*.sass`` listing (the cubin removed either
    way: binaries are not kept in results); which cubin became which listing. All at once: each
    is a Python start in the sandbox and a cuobjdump (one after another, the softmax example's
    took 1.7-2.3 s of its profile on the H100)."""
    cubins = sorted(folder.glob("*.cubin"))
    with ThreadPoolExecutor(max_workers=max(1, min(len(cubins), os.cpu_count() or 1))) as pool:
        names = list(pool.map(lambda c: disassemble(c, c.with_suffix(".sass")), cubins))
    for cubin in cubins:
        cubin.unlink()
    return {c.name: n for c, n in zip(cubins, names, strict=True) if n}
