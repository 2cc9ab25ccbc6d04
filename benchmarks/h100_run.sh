#!/usr/bin/env bash
# The evidence run on the GPU machine (see docs/runs/). Run from the repo root, with the wheels
# from ../shared/gpu/make-wheels.sh in .whl/ and $OUT set by the device tool:
#   bash benchmarks/h100_run.sh graph    # the whole graph (profiles included), then its overhead
#   bash benchmarks/h100_run.sh checks   # v0 rerun three times (spread), the GPU tests
# Each phase fits in one 10-minute device call.
set -uo pipefail
phase=${1:-graph}
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | grep -v "already exists" || true
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/kopt-out}
mkdir -p "$OUT"
run() { echo "\$ $*"; /usr/bin/time -f "[wall %e s]" "$@"; }
if [ "$phase" = graph ]; then
  {
    nvidia-smi
    nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
    python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
    ncu --version
  } > "$OUT/machine.txt" 2>&1
  rm -rf results
  run python3 -m snakemake --cores 1 > "$OUT/snakemake.log" 2>&1  # all: compare.json of v3, env_check, reports
  echo "graph exit: $?" >> "$OUT/snakemake.log"
  [ -n "${SKIP_OVERHEAD:-}" ] || run python3 benchmarks/graph_overhead.py > "$OUT/overhead.txt" 2>&1
  python3 -m snakemake --report results/report.html > "$OUT/report.log" 2>&1
  tar czf "$OUT/results.tgz" results/
  tail -n 3 "$OUT/snakemake.log"; if [ -f "$OUT/overhead.txt" ]; then tail -n 3 "$OUT/overhead.txt"; fi
else
  # results/ of the graph phase is still there on a warm machine: remeasure the ceilings (and so
  # every bottleneck and comparison), ignoring modification times the file sync may have moved
  if [ -d results/v3 ]; then
    run python3 -m snakemake --cores 1 -R hardware --rerun-triggers input params > "$OUT/snakemake_ceilings.log" 2>&1
    tar czf "$OUT/results.tgz" results/
  fi
  run python3 benchmarks/rerun_spread.py --version v0 --runs 3 > "$OUT/spread.txt" 2>&1
  run python3 -m pytest -q -s -p no:cacheprovider tests/gpu tests/test_bad_kernels.py > "$OUT/pytest_gpu.txt" 2>&1
  tail -n 5 "$OUT/spread.txt" "$OUT/pytest_gpu.txt"
fi
