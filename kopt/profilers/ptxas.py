"""The resources ptxas reports for each kernel of a CUDA build (``nvcc --ptxas-options=-v``).

Parsed from the compiler's log: registers per thread, spill stores and loads, stack frame, shared
memory and barriers per entry function, with C++ names demangled (c++filt) so they match the
kernel names Nsight Compute and torch.profiler print. The records use the keys of the Triton
specialisations (``n_regs``, ``n_spills``, ``shared_bytes``) so the profile treats both alike.
"""

from __future__ import annotations

import re
import shutil
import subprocess

_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '([^']+)'")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_BARRIERS = re.compile(r"used (\d+) barriers")
_SMEM = re.compile(r"(\d+) bytes smem")


def demangle(names: list[str]) -> dict[str, str]:
    """Mangled C++ names to readable ones (unchanged where c++filt is missing or the name is C)."""
    tool = shutil.which("c++filt")
    mangled = [n for n in names if n.startswith("_Z")]
    if not tool or not mangled:
        return {n: n for n in names}
    out = subprocess.run([tool], input="\n".join(mangled), capture_output=True, text=True, timeout=30).stdout
    readable = dict(zip(mangled, out.splitlines(), strict=False))
    return {n: readable.get(n, n) for n in names}


def parse(log: str) -> list[dict]:
    """One record per entry function compiled, in the order ptxas reports them."""
    kernels: list[dict] = []
    cur: dict | None = None
    for line in log.splitlines():
        if m := _ENTRY.search(line):
            cur = {"mangled": m.group(1), "arch": m.group(2), "n_regs": None, "n_spills": None}
            kernels.append(cur)
            continue
        if cur is None:
            continue
        if m := _FRAME.search(line):
            cur.update(stack_bytes=int(m.group(1)), spill_store_bytes=int(m.group(2)), spill_load_bytes=int(m.group(3)))
            cur["n_spills"] = int(m.group(2)) + int(m.group(3))
        if m := _USED.search(line):
            cur["n_regs"] = int(m.group(1))
            cur["barriers"] = int(m.group(1)) if (m := _BARRIERS.search(line)) else 0
            cur["shared_bytes"] = int(m.group(1)) if (m := _SMEM.search(line)) else 0
    names = demangle([k["mangled"] for k in kernels])
    for k in kernels:
        k["name"] = names[k["mangled"]]
        k["source"] = "ptxas"
    return kernels
