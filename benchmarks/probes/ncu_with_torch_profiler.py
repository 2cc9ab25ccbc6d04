"""Probe (H100): can torch.profiler run inside a process that Nsight Compute profiles with an NVTX
filter, and do per-class NVTX ranges show up in ncu's CSV? Run:
    ncu --csv --page details --section LaunchStats --nvtx --nvtx-include 'kopt-profile/' \
        --print-nvtx-rename kernel --log-file /tmp/p.csv python3 benchmarks/probes/ncu_with_torch_profiler.py
"""

import torch
from torch.profiler import ProfilerActivity, profile

x = torch.randn(1 << 24, device="cuda")
for cls in ("N=256", "N=2048"):
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(3):
            y = x * 2.0 + 1.0
        torch.cuda.synchronize()
    ev = [e for e in prof.events() if e.device_type.name == "CUDA"]
    print(f"torch.profiler under ncu, {cls}: {len(ev)} GPU events, total {sum(e.device_time for e in ev):.1f} us")
    torch.cuda.nvtx.range_push("kopt-profile")
    torch.cuda.nvtx.range_push(f"class {cls}")
    y = torch.relu(x)
    if cls == "N=2048":
        y = torch.sigmoid(y)  # a second launch in this class only
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_pop()
print("done")
