"""Probe (issue 42, point 4): why honest faster kernels show more unseen time back to back.

The GEMM example's v1 at 8192^3 read +107 to +157 µs per call more in the bound's batches than
Nsight Compute's one-by-one launches showed (docs/runs/h100-bound/fresh-13/gemm). Hypothesis: 32
calls back to back draw more power than one launch at a time and the SM clock drops. Per kernel:
calls one by one (an L2 flush and 20 ms idle before each, as Nsight Compute's replay leaves the GPU
idle), then 32 back to back on 32 input sets, each call timed by events; NVML's SM clock and power
sampled every millisecond by a thread of this process.

    source benchmarks/gpu_env.sh; python3 benchmarks/probes/bound_throttle.py
"""

import ctypes
import statistics
import sys
import threading
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from kopt.profilers import gpus  # noqa: E402


def power_w() -> float | None:
    h = gpus._init()
    v = ctypes.c_uint()
    return v.value / 1000 if h is not None and gpus._lib.nvmlDeviceGetPowerUsage(h, ctypes.byref(v)) == 0 else None


class Sampler(threading.Thread):
    def __init__(self):
        super().__init__(daemon=True)
        self.rows, self.on = [], True

    def run(self):
        while self.on:
            self.rows.append((time.perf_counter(), gpus.sm_clock_mhz(), power_w()))
            time.sleep(0.001)


def timed(fn) -> float:
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    fn()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) * 1e3


def probe(name: str, calls: list) -> None:
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for f in calls[:3]:
        f()
    one = []
    for f in calls[:12]:
        flush.zero_()
        torch.cuda.synchronize()
        time.sleep(0.02)
        one.append((timed(f), gpus.sm_clock_mhz()))
    s = Sampler()
    s.start()
    time.sleep(0.05)
    flush.zero_()
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(len(calls) + 1)]
    t0 = time.perf_counter()
    ev[0].record()
    for i, f in enumerate(calls):
        f()
        ev[i + 1].record()
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    time.sleep(0.02)
    s.on = False
    s.join()
    per = [ev[i].elapsed_time(ev[i + 1]) * 1e3 for i in range(len(calls))]
    during = [(c, p) for t, c, p in s.rows if t0 <= t <= t1 and c]
    print(
        f"{name}: one by one {statistics.median(u for u, _ in one):9.1f} µs (SM {statistics.median(c for _, c in one)} MHz); "
        f"back to back first 4 {statistics.mean(per[:4]):9.1f} last 8 {statistics.mean(per[-8:]):9.1f} "
        f"median {statistics.median(per):9.1f} µs; SM clock during min {min(c for c, _ in during)} "
        f"median {statistics.median(c for c, _ in during)} MHz, power max {max(p for _, p in during):.0f} W "
        f"({len(during)} samples)",
        flush=True,
    )


def main() -> None:
    sys.path.insert(0, str(ROOT / "examples" / "gemm" / "kernels"))
    import v1  # noqa: PLC0415

    n = 8192
    sets = [
        (torch.randn(n, n, device="cuda", dtype=torch.bfloat16), torch.randn(n, n, device="cuda", dtype=torch.bfloat16))
        for _ in range(24)
    ]
    c = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    probe("gemm v1 8192^3", [lambda a=a, b=b, c=c: v1.run_kernel(a, b, c) for a, b in sets])
    probe("torch.matmul 8192^3", [lambda a=a, b=b, c=c: torch.matmul(a, b, out=c) for a, b in sets])
    del sets, c
    x = [torch.randn(262144, 256, device="cuda") for _ in range(24)]
    y = torch.empty_like(x[0])
    probe("mul 262144x256 fp32 (memory bound)", [lambda t=t: torch.mul(t, 2.0, out=y) for t in x])


if __name__ == "__main__":
    main()
