#!/usr/bin/env bash
# Probe (H100): where the fixed costs of one version go: the file system under Python's imports,
# `import torch`, the first CUPTI session (torch.profiler and CUPTI itself), the phases of a torch
# process under Nsight Compute, and Snakemake's start-up with and without compiled bytecode.
#   bash benchmarks/probes/fixed_costs.sh   (wheels in /tmp/site; cupti-python's wheels in .probe/)
set -u
t() { local s e; s=$(date +%s%N); "$@" > /tmp/probe.out 2>&1; e=$(date +%s%N); printf '%6d ms  %s\n' $(((e - s) / 1000000)) "$*"; }
echo "== machine"
df -T / /tmp /dev/shm "$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))' 2>/dev/null)" | sed 's/  */ /g'
env | grep -E '^PYTHON|^CUDA_|^TORCH' | sort
python3 -c 'import sys; print("dont_write_bytecode", sys.flags.dont_write_bytecode, sys.version.split()[0])'
echo "== stat and read speed of torch's files"
python3 - <<'PY'
import os, time, torch
root = os.path.dirname(torch.__file__)
t = time.perf_counter(); n = 0
for r, ds, fs in os.walk(os.path.dirname(root)):
    for f in fs:
        os.stat(os.path.join(r, f)); n += 1
print(f"stat of {n} files in site-packages: {time.perf_counter() - t:.2f} s")
PY
echo "== import torch, broken down (second run)"
python3 -X importtime -c "import torch" 2>/dev/null
python3 -X importtime -c "import torch" 2> /tmp/imp.txt; sort -t'|' -k2 -n /tmp/imp.txt | tail -n 14
t python3 -c "import torch"
t env TORCH_DEVICE_BACKEND_AUTOLOAD=0 python3 -c "import torch"
t python3 -c "import ctypes; ctypes.CDLL('$(python3 -c 'import torch,os;print(os.path.join(os.path.dirname(torch.__file__),"lib","libtorch_cuda.so"))')')"
echo "== the first CUPTI session"
for mode in LAZY EAGER; do
CUDA_MODULE_LOADING=$mode python3 - <<'PY'
import os, time
t0 = time.perf_counter(); import torch; t1 = time.perf_counter()
x = torch.ones(1 << 20, device="cuda"); torch.cuda.synchronize(); t2 = time.perf_counter()
from torch.profiler import ProfilerActivity, profile
with profile(activities=[ProfilerActivity.CUDA]):
    x.add_(1); torch.cuda.synchronize()
t3 = time.perf_counter()
with profile(activities=[ProfilerActivity.CUDA]):
    x.add_(1); torch.cuda.synchronize()
t4 = time.perf_counter()
print(f"{os.environ['CUDA_MODULE_LOADING']}: import {t1-t0:.2f}, context+kernel {t2-t1:.2f}, first session {t3-t2:.2f}, second {t4-t3:.2f} s")
PY
done
python3 - <<'PY'
import sys, time
sys.path.insert(0, "/tmp/probe-site")
t0 = time.perf_counter(); import torch
x = torch.ones(1 << 20, device="cuda"); torch.cuda.synchronize(); t1 = time.perf_counter()
try:
    from cupti import cupti
except Exception as e:
    print("cupti-python not importable:", e); raise SystemExit
got = []
def req(): return 8 << 20, 0
def done(acts): got.extend(a.kind for a in acts)
t2 = time.perf_counter()
cupti.activity_register_callbacks(req, done)
cupti.activity_enable(cupti.ActivityKind.CONCURRENT_KERNEL)
t3 = time.perf_counter()
x.add_(1); torch.cuda.synchronize(); cupti.activity_flush_all(1)
t4 = time.perf_counter()
cupti.activity_disable(cupti.ActivityKind.CONCURRENT_KERNEL)
print(f"cupti-python: context {t1-t0:.2f}, enable CONCURRENT_KERNEL {t3-t2:.2f}, kernel+flush {t4-t3:.2f} s, {len(got)} records")
PY
echo "== a torch process under Nsight Compute, phase by phase"
cat > /tmp/phases.py <<'PY'
import time, sys
t = [time.time()]
import torch
t.append(time.time())
x = torch.zeros(1 << 20, device="cuda"); torch.cuda.synchronize()
t.append(time.time())
torch.cuda.nvtx.range_push("kopt-profile"); y = x + 1; torch.cuda.synchronize(); torch.cuda.nvtx.range_pop()
t.append(time.time())
s0 = float(sys.argv[1])
print("python started %.2f, torch imported %.2f, CUDA context %.2f, profiled kernel %.2f (s after the command)" % tuple(v - s0 for v in t))
PY
for w in "" "ncu --csv --page details --print-units base --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section Occupancy --section LaunchStats --section WarpStateStats --nvtx --nvtx-include kopt-profile/ --target-processes all --log-file /tmp/ncu.csv"; do
  for i in 1 2; do s=$(date +%s.%N); $w python3 /tmp/phases.py "$s" | grep started; e=$(date +%s.%N); echo "  ${w:+under ncu, }exit at $(python3 -c "print(round($e - $s, 2))") s"; done
done
echo "== Snakemake's start-up"
for i in 1 2; do t python3 -c "import snakemake.cli"; done
echo "pyc files in /tmp/site/snakemake: $(find /tmp/site/snakemake -name '*.pyc' | wc -l)"
t python3 -m compileall -q /tmp/site
for i in 1 2; do t python3 -c "import snakemake.cli"; done
t python3 -m snakemake --version
