"""Probe (H100): can torch.profiler's first-session cost (about 6 s per process on the H100 machine)
be paid in a thread while the main thread keeps the GPU busy, as the correctness phase does?

    python3 benchmarks/probes/profiler_warmup_overlap.py serial|overlap

Prints the main thread's work time, the warm-up's, the first real session's and the total.
"""

import sys
import threading
import time

import torch
from torch.profiler import ProfilerActivity, profile


def warm_up():
    with profile(activities=[ProfilerActivity.CUDA]):
        pass


def work(seconds: float = 4.0) -> int:
    """GPU work with a host sync per step, like the checked calls of the correctness phase."""
    x = torch.randn(1 << 24, device="cuda")
    n, end = 0, time.perf_counter() + seconds
    while time.perf_counter() < end:
        y = torch.softmax(x.view(4096, -1), dim=1)
        float(y.sum())
        n += 1
    return n


mode = sys.argv[1]
torch.zeros(1, device="cuda")
t0 = time.perf_counter()
if mode == "overlap":
    th = threading.Thread(target=warm_up, name="profiler-warm-up")
    th.start()
steps = work()
t1 = time.perf_counter()
if mode == "overlap":
    th.join()
else:
    warm_up()
t2 = time.perf_counter()
with profile(activities=[ProfilerActivity.CUDA]) as p:
    torch.softmax(torch.randn(4096, 4096, device="cuda"), dim=1)
    torch.cuda.synchronize()
t3 = time.perf_counter()
gpu = [e for e in p.events() if e.device_type.name == "CUDA"]
print(
    f"{mode}: work {t1 - t0:.2f} s ({steps} steps), warm-up left {t2 - t1:.2f} s, first real session {t3 - t2:.2f} s "
    f"({len(gpu)} GPU events), total {t3 - t0:.2f} s"
)
