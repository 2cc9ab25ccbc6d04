#!/usr/bin/env bash
# gpu-mode problems as they are, through kernel-opt's whole graph on the GPU (issue 32): per problem
# `kopt init --gpumode` (v0: the problem's own submission.py, a custom_kernel), and for vectoradd
# its Triton custom_kernel (solutions/submission_triton.py) as v1; Snakemake builds the last
# version's compare.json in runs/gm/<problem>/. Prints each problem's wall seconds (init + graph).
#   source benchmarks/gpu_env.sh && bash benchmarks/gpumode_gpu.sh
set -uo pipefail
GM=tests/fixtures/gpumode/pmpp_v2
for p in vectoradd_py grayscale_py; do
  d=runs/gm/$p; rm -rf "$d"; mkdir -p "$d"
  t0=$EPOCHREALTIME
  python3 -m kopt.cli init "$d/ws" --gpumode "$GM/$p" > "$d/init.log" 2>&1 || { echo "$p: kopt init failed: $(tail -1 "$d/init.log")"; continue; }
  last=v0
  if [ -f "$GM/$p/solutions/submission_triton.py" ]; then
    cp "$GM/$p/solutions/submission_triton.py" "$d/ws/kernels/v1.py"
    cat > "$d/ws/kernels/v1.yaml" <<'YAML'
parent: v0
hypothesis: "A Triton custom_kernel, the problem's solutions/submission_triton.py, as it is"
rationale: "One program per block of elements: the add reads each input once and writes once, as the submission does."
expected: "About the submission's time: both are at the memory bandwidth"
target_class: all
YAML
    last=v1
  fi
  timeout 400 python3 -m snakemake --cores 1 -d "$d" "results/$last/compare.json" --config workspace="$PWD/$d/ws" > "$d/snakemake.log" 2>&1
  rc=$?
  t1=$EPOCHREALTIME
  decision=$(python3 -c "import json,sys; c=json.load(open('$d/results/$last/compare.json')); print(c['decision'], c.get('reason'), c.get('detail'))" 2>/dev/null)
  printf '%s: exit %s in %.1f s (init and graph); %s: %s\n' "$p" "$rc" "$(python3 -c "print($t1 - $t0)")" "$last" "$decision"
done
