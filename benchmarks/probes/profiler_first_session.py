"""What the first torch.profiler session of a process costs, depending on when it is opened: after
the CUDA context exists and a kernel ran (what a bench child does today), or before anything
touched CUDA. One process per mode; prints the seconds of each step.

    python3 benchmarks/probes/profiler_first_session.py after|before|env
"""

import os
import sys
import time

t0 = time.perf_counter()
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

mode = sys.argv[1] if len(sys.argv) > 1 else "after"
steps = [("import torch", time.perf_counter() - t0)]


def step(name, fn):
    t = time.perf_counter()
    fn()
    torch.cuda.synchronize() if torch.cuda.is_initialized() else None
    steps.append((name, time.perf_counter() - t))


def session(n=16):
    x = torch.randn(4096, 4096, device="cuda")
    with profile(activities=[ProfilerActivity.CUDA]):
        for _ in range(n):
            x.mul_(1.0)
        torch.cuda.synchronize()


def empty_session():
    with profile(activities=[ProfilerActivity.CUDA]):
        pass


if mode == "before":
    step("empty CUDA profiler session before CUDA is touched", empty_session)
step("CUDA context and a first kernel", lambda: torch.ones(1, device="cuda").add_(1))
step("first profiler session with 16 kernels" if mode != "before" else "profiler session with 16 kernels", session)
step("second profiler session with 16 kernels", session)
print(f"mode {mode} (CUDA_MODULE_LOADING={os.environ.get('CUDA_MODULE_LOADING', 'unset')}):")
for name, s in steps:
    print(f"  {name}: {s:.2f} s")
