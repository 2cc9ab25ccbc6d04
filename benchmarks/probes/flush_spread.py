"""Probe (issue 31): how far apart are Nsight Compute's GPU times of one kernel in separate
processes, and does the L2 flush before each call decide it?

On the H100 the honest softmax v1 on 4096x4096 fp32 read 46.9-48.0 us per call on ncu in five
processes of one GPU test run (tests/gpu/test_gpu_clock.py), enough for a 1% noise rule to keep an
identical copy. Here each of PROCESSES processes, under the deciding clock's ncu command, calls the
softmax example's v1 CALLS times, each call after the L2 flush of one MODE, then the spread of the
per-process means (ncu's record, softmax launches only) is printed per mode and shape:
'write' (a 256 MB zero_, as the judge does: it leaves the L2 full of dirty lines), 'read' (a 256 MB
sum: clean lines) and 'none'.

    source benchmarks/gpu_env.sh; python3 benchmarks/probes/flush_spread.py
"""

import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
SHAPES = [(4096, 4096), (262144, 256), (64, 64)]
MODES = ["write", "read", "none"]
# KOPT_PROBE=rotate: 4096x4096 only, 'write' on one buffer against 'rotate' (8 input and output
# buffers in turn, fresh values each call, as the clock's pool of input sets was)
if os.environ.get("KOPT_PROBE") == "rotate":
    SHAPES, MODES = [(4096, 4096)], ["write", "rotate"]
PROCESSES, CALLS = 5, 16


def child(mode: str, m: int, n: int) -> None:
    import torch

    spec = importlib.util.spec_from_file_location("v1", ROOT / "examples" / "softmax" / "kernels" / "v1.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    sets = [
        (torch.randn(m, n, device="cuda"), torch.empty(m, n, device="cuda"))
        for _ in range(8 if mode == "rotate" else 1)
    ]
    for i in range(CALLS):
        x, y = sets[i % len(sets)]
        if mode == "rotate":
            x.normal_()
        if mode in ("write", "rotate"):
            flush.zero_()
        elif mode == "read":
            flush.sum(dtype=torch.int32)
        torch.cuda.synchronize()
        mod.run_kernel(x=x, y=y)
        torch.cuda.synchronize()


def main() -> None:
    from kopt.profilers import ncu

    tmp = Path(tempfile.mkdtemp())
    for m, n in SHAPES:
        for mode in MODES:
            means = []
            for p in range(PROCESSES):
                csv = tmp / f"{mode}_{m}_{n}_{p}.csv"
                cmd = [*ncu.clock_command("ncu", str(csv)), sys.executable, __file__, "child", mode, str(m), str(n)]
                subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
                us = [ln["us"] for ln in ncu.clock_launches(csv.read_text()) if "softmax" in str(ln["kernel"])]
                means.append(statistics.mean(us))
                if p == 0:
                    print(f"  {mode} {m}x{n} process 0 per launch: {[round(u, 2) for u in us]}")
            lo, hi, mid = min(means), max(means), statistics.mean(means)
            print(
                f"{m}x{n} flush={mode}: process means {[round(v, 3) for v in means]} us; "
                f"range {hi - lo:.3f} us ({100 * (hi - lo) / mid:.2f}%), sd {statistics.pstdev(means):.3f} us",
                flush=True,
            )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    else:
        main()
