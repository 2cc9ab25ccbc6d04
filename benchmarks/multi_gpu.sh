#!/usr/bin/env bash
# Several GPUs of one host (issue 13): the example's versions v0..$LAST evaluated with K GPU jobs
# at once (`--resources gpu=K`), for each K in $KS, in one session on one machine. Run from the
# repo root on the GPU machine with the wheels in .whl/ and $OUT set by the device tool:
#   bash benchmarks/multi_gpu.sh                 # KS="2 1": K=2 first, so K=1 gets the warmer file cache
# First the rules every version shares (settings, reference, the GPU's ceilings) run once; then,
# for each K, the versions' results are removed and rebuilt with a fresh Triton cache, timed; the
# gate's claims in provenance say which GPU ran what and when (benchmarks/gpu_overlap.py).
set -uo pipefail
export LAST=${LAST:-v5} CORES=${CORES:-8} KS=${KS:-"2 1"} LIMIT=${LIMIT:-280}
source benchmarks/gpu_env.sh
sm() { python3 -m snakemake "results/$LAST/compare.json" --cores "$CORES" "$@" --rerun-incomplete --rerun-triggers input params code; }
{
  nvidia-smi --query-gpu=index,name,uuid,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
  python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  ncu --version | tail -1
  nproc
} > "$OUT/machine.txt" 2>&1
rm -rf results .snakemake/metadata
python3 -m snakemake --unlock > /dev/null 2>&1
echo "== shared rules (once)" > "$OUT/runs.log"
sm --omit-from measure recorded >> "$OUT/runs.log" 2>&1
for k in $KS; do
  rm -rf results/v[0-9]* results/logs/v[0-9]* results/benchmarks/v[0-9]*
  export TRITON_CACHE_DIR=/tmp/triton-cache-k$k
  rm -rf "$TRITON_CACHE_DIR"
  echo "== K=$k: snakemake results/$LAST/compare.json --cores $CORES --resources gpu=$k" >> "$OUT/runs.log"
  start=$(date +%s.%N)
  timeout "$LIMIT" bash -c "$(declare -f sm); sm --resources gpu=$k" >> "$OUT/runs.log" 2>&1
  rc=$?
  wall=$(python3 -c "import time; print(f'{time.time() - $start:.1f}')")
  echo "K=$k exit $rc wall $wall s" | tee -a "$OUT/summary.txt" >> "$OUT/runs.log"
  {
    echo "## K=$k (wall $wall s, exit $rc)"
    python3 benchmarks/gpu_overlap.py results
    for v in results/v[0-9]*/compare.json; do
      python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(sys.argv[1], d.get('decision'))" "$v"
    done
  } >> "$OUT/overlap.txt" 2>&1
  tar czf "$OUT/results-k$k.tgz" --exclude='*/raw' --exclude='*/asm' results/
done
cat "$OUT/summary.txt"; grep -E "^GPU jobs|overlap" "$OUT/overlap.txt"
