"""Probe (issue 31): where a clock process's first call goes. One process imports torch, makes its
CUDA context, launches a fill (the clock's warm-up), imports the softmax example's v1, and calls it
12 times on 262144x256 fp32 (another buffer pair from the 7th on), printing the host time of each
step (synchronized). Run plain and under the deciding clock's ncu command, Triton's cache warm
(the first plain run fills it):

    source benchmarks/gpu_env.sh; python3 benchmarks/probes/clock_first_call.py
"""

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KERNEL = "examples/softmax/kernels/v1.py"


def child() -> None:
    t0_ref, marks = [time.perf_counter()], []

    def mark(name: str) -> None:  # ms since the last mark
        torch.cuda.synchronize()
        marks.append((name, round((time.perf_counter() - t0_ref[0]) * 1e3, 1)))
        t0_ref[0] = time.perf_counter()

    import torch

    mark("import torch")
    torch.empty(1, device="cuda")
    mark("context")
    torch.ones(1, device="cuda")
    mark("fill (warm-up)")
    import importlib.util

    spec = importlib.util.spec_from_file_location("k", KERNEL)
    k = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(k)
    mark("import kernel")
    xs = [torch.randn(262144, 256, device="cuda") for _ in range(2)]
    ys = [torch.empty_like(x) for x in xs]
    mark("inputs")
    for i in range(12):
        t0_ref[0] = time.perf_counter()
        k.run_kernel(xs[i // 6], ys[i // 6])
        torch.cuda.synchronize()
        marks.append((f"call {i}", round((time.perf_counter() - t0_ref[0]) * 1e3, 2)))
    print(marks, flush=True)


def main() -> None:
    from kopt.profilers import ncu

    env = {**os.environ, "TRITON_CACHE_DIR": tempfile.mkdtemp()}
    me = [sys.executable, __file__, "child"]
    tmp = tempfile.mkdtemp()
    for name, prefix in [
        ("plain, cold Triton cache", []),
        ("plain", []),
        ("under ncu", ncu.clock_command(shutil.which("ncu"), f"{tmp}/a.csv")),
        ("under ncu, again", ncu.clock_command(shutil.which("ncu"), f"{tmp}/b.csv")),
    ]:
        t = time.perf_counter()
        out = subprocess.run([*prefix, *me], env=env, capture_output=True, text=True)
        print(f"== {name}: process {time.perf_counter() - t:.2f} s, rc {out.returncode}")
        print(out.stdout.strip()[-3000:], out.stderr.strip()[-500:], sep="\n")
    print(Path(f"{tmp}/b.csv").read_text()[-1500:])


if __name__ == "__main__":
    child() if sys.argv[1:] == ["child"] else main()
