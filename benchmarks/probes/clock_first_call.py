"""Probe (issue 31): where a clock process's first call goes. One process imports torch, makes its
CUDA context, launches a fill (the clock's warm-up), imports the softmax example's v1, and calls it
12 times on 262144x256 fp32 (another buffer pair from the 7th on), printing the host time of each
step (synchronized) and the programs the process started. Run plain and under the deciding clock's
ncu command, Triton's cache warm (the first plain run fills it); then under ncu with Triton told
its tools (kopt.measure.boundary.triton_tools_env: no `ldconfig -p`, no `ptxas --version`), and
sandboxed with signals to processes outside the sandbox refused (can Nsight Compute still profile
a process so scoped?):

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

    import subprocess as sp

    started, real_init = [], sp.Popen.__init__

    def logged(self, args, *a, **k):
        started.append(str(args[0] if isinstance(args, (list, tuple)) else args).split("/")[-1])
        real_init(self, args, *a, **k)

    sp.Popen.__init__ = logged
    if os.environ.get("PROBE_SANDBOX"):
        from kopt.inside import sandbox

        print(sandbox.apply(os.environ["PROBE_SANDBOX"]), flush=True)
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
    print(marks, "started:", started, flush=True)


def main() -> None:
    from kopt.measure.boundary import triton_tools_env
    from kopt.profilers import ncu

    scratch = tempfile.mkdtemp()
    env = {**os.environ, "TRITON_CACHE_DIR": f"{scratch}/triton"}
    told = {**env, **triton_tools_env()}
    print("Triton told:", triton_tools_env())
    me = [sys.executable, __file__, "child"]
    tmp = tempfile.mkdtemp()
    for name, prefix, how in [
        ("plain, cold Triton cache", [], env),
        ("plain", [], env),
        ("plain, Triton told its tools", [], told),
        ("under ncu", ncu.clock_command(shutil.which("ncu"), f"{tmp}/a.csv"), env),
        ("under ncu, again", ncu.clock_command(shutil.which("ncu"), f"{tmp}/b.csv"), env),
        ("under ncu, Triton told its tools", ncu.clock_command(shutil.which("ncu"), f"{tmp}/c.csv"), told),
        (
            "under ncu, told, sandboxed, signals scoped",
            ncu.clock_command(shutil.which("ncu"), f"{tmp}/d.csv"),
            {**told, "PROBE_SANDBOX": scratch},
        ),
    ]:
        t = time.perf_counter()
        out = subprocess.run([*prefix, *me], env=how, capture_output=True, text=True)
        print(f"== {name}: process {time.perf_counter() - t:.2f} s, rc {out.returncode}")
        print(out.stdout.strip()[-3000:], out.stderr.strip()[-500:], sep="\n")
    for f in ("b", "d"):
        print(f"== {f}.csv", Path(f"{tmp}/{f}.csv").read_text()[-1200:], sep="\n")


if __name__ == "__main__":
    child() if sys.argv[1:] == ["child"] else main()
