#!/usr/bin/env bash
# Probe (H100): where a child process's start-up and Nsight Compute's wrap of a torch process go.
# Each line: seconds of wall time for one command (the second run of a pair is the warm one).
#   bash benchmarks/probes/startup_costs.sh
set -u
t() { local s e; s=$(date +%s%N); "$@" > /tmp/probe.out 2>&1; e=$(date +%s%N); printf '%6d ms  %s\n' $(((e - s) / 1000000)) "$*"; }
GPU="import torch; x = torch.zeros(1 << 20, device='cuda'); torch.cuda.nvtx.range_push('kopt-profile'); y = x + 1; torch.cuda.synchronize(); torch.cuda.nvtx.range_pop()"
NCU=(ncu --csv --page details --clock-control none --nvtx --nvtx-include kopt-profile/ --log-file /tmp/ncu.csv)
echo "== python start-up"
t python3 -c "pass"
t python3 -c "import torch"
t python3 -c "import torch"
t python3 -c "import torch, triton"
t python3 -c "import torch; torch.zeros(1, device='cuda')"
t python3 -c "$GPU"
t python3 -c "import kopt.measure.child"
python3 -X importtime -c "import kopt.measure.child" 2> /tmp/imp.txt; sort -t'|' -k2 -n /tmp/imp.txt | tail -n 12
echo "== the same program under Nsight Compute"
t ncu --version
t "${NCU[@]}" python3 -c "pass"
t "${NCU[@]}" python3 -c "import torch"
t "${NCU[@]}" python3 -c "$GPU"
t "${NCU[@]}" python3 -c "$GPU"
t "${NCU[@]}" --target-processes application-only python3 -c "$GPU"
t "${NCU[@]}" --cache-control none python3 -c "$GPU"
t env CUDA_MODULE_LOADING=LAZY "${NCU[@]}" python3 -c "$GPU"
t env CUDA_MODULE_LOADING=EAGER python3 -c "$GPU"
t "${NCU[@]}" --section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section SchedulerStats python3 -c "$GPU"
grep -c '"' /tmp/ncu.csv
echo "== torch.profiler's first session"
for acts in "ProfilerActivity.CUDA" "ProfilerActivity.CPU, ProfilerActivity.CUDA"; do
python3 - "$acts" <<PY
import time, sys, torch
from torch.profiler import profile, ProfilerActivity
x = torch.zeros(1 << 20, device="cuda"); torch.cuda.synchronize()
for i in range(3):
    t = time.perf_counter()
    with profile(activities=[$acts]) as p:
        y = x + 1; torch.cuda.synchronize()
    print(f"session {i} [{sys.argv[1]}]: {time.perf_counter() - t:.2f} s")
PY
done
