"""Probe (issue 31): can a kernel hide launches from the deciding clock by stopping the profiler?

A process under the deciding clock's ncu command (kopt.profilers.ncu.clock_command) launches 5
fills, calls cudaProfilerStop (torch.cuda.profiler.stop), 5 more, cudaProfilerStart, 5 more; then
the same with the driver's cuProfilerStop through ctypes. Printed: how many launches Nsight
Compute recorded (15 + 15 if it ignores both), with each extra ncu option that this ncu has
for start/stop (from ``ncu --help``).

    source benchmarks/gpu_env.sh; python3 benchmarks/probes/clock_profiler_stop.py
"""

import ctypes
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def child() -> None:
    import torch

    x = torch.empty(1 << 20, device="cuda")
    for how in ("runtime", "driver"):
        libcuda = ctypes.CDLL("libcuda.so.1")
        stop = torch.cuda.profiler.stop if how == "runtime" else libcuda.cuProfilerStop
        start = torch.cuda.profiler.start if how == "runtime" else libcuda.cuProfilerStart
        for phase in ("before", "stopped", "after"):
            if phase == "stopped":
                print(how, "stop ->", stop(), flush=True)
            if phase == "after":
                print(how, "start ->", start(), flush=True)
            for _ in range(5):
                x.fill_(1.0)
            torch.cuda.synchronize()
    print("child done", flush=True)


def main() -> None:
    from kopt.profilers import ncu

    exe = shutil.which("ncu")
    helptext = subprocess.run([exe, "--help"], capture_output=True, text=True).stdout
    lines = helptext.splitlines()
    hits = [i for i, ln in enumerate(lines) if "start" in ln.lower() and "--" in ln]
    print("ncu --help, options naming start:")
    for i in hits:
        print("\n".join(lines[i : i + 4]))
    extras = [[]]
    if "--disable-profiler-start-stop" in helptext:
        extras.append(["--disable-profiler-start-stop"])
    if "--profile-from-start" in helptext:
        extras.append(["--profile-from-start", "on"])
    tmp = tempfile.mkdtemp()
    for extra in extras:
        csv = f"{tmp}/r{len(extra)}.csv"
        cmd = ncu.clock_command(exe, csv)
        cmd = [cmd[0], *extra, *cmd[1:]]
        out = subprocess.run([*cmd, sys.executable, __file__, "child"], capture_output=True, text=True)
        text = Path(csv).read_text(errors="replace") if Path(csv).exists() else ""
        try:
            n = len(ncu.clock_launches(text))
        except ValueError as e:
            n = f"unread ({e})"
        print(f"== extra {extra}: rc {out.returncode}, launches recorded: {n} (30 made, plus the empty's)")
        print(out.stdout.strip()[-800:], out.stderr.strip()[-400:], sep="\n")


if __name__ == "__main__":
    child() if sys.argv[1:] == ["child"] else main()
