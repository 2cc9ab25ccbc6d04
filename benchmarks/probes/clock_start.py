"""Probe (issue 31): do the deciding clock's kernel processes live through their start under
Nsight Compute, with and without the warm-up launch, and what does ncu write? Prints each
process's state every second for 15 s, then begins one, then its record.

    source benchmarks/gpu_env.sh; python3 benchmarks/probes/clock_start.py
"""

import shutil
import sys
import tempfile
import time
from pathlib import Path

from kopt.measure.boundary import KernelProcess
from kopt.measure.outside_clock import BASELINE_RANGE
from kopt.profilers import ncu

KERNEL = "examples/softmax/kernels/v1.py"


def main() -> None:
    tool = shutil.which("ncu")
    tmp = Path(tempfile.mkdtemp())
    procs = {}
    for warm in (True, False):
        csv = tmp / f"warm_{warm}.csv"
        env = {"KOPT_CLOCK_WARMUP": BASELINE_RANGE} if warm else {}
        procs[warm] = (KernelProcess(KERNEL, wrapper=ncu.clock_command(tool, str(csv)), begin=False, env=env), csv)
    for t in range(15):
        time.sleep(1)
        print(t, {w: p.proc.poll() for w, (p, _) in procs.items()}, flush=True)
    for warm, (p, csv) in procs.items():
        try:
            p.begin()
            print("begun", warm, p.sandbox, flush=True)
        except Exception as e:  # noqa: BLE001 - a probe: say what happened
            print("begin failed", warm, type(e).__name__, e, flush=True)
        p.finish()
        print(f"--- record, warm-up {warm}:\n" + (csv.read_text() if csv.exists() else "(none)"), flush=True)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
