#!/usr/bin/env bash
# The evidence runs on the GPU machine (see docs/runs/). Run from the repo root, with the wheels
# from ../shared/gpu/make-wheels.sh in .whl/ and $OUT set by the device tool:
#   bash benchmarks/h100_run.sh tests    # GPU tests (cheats, replays, dtypes) and the KernelBench problems
#   bash benchmarks/h100_run.sh cuda     # the CUDA variant kind's tests (build, binding, gate and timing on the GPU)
#   bash benchmarks/h100_run.sh graph    # the example's whole graph (resumes on a warm machine)
#   bash benchmarks/h100_run.sh checks   # rerun spread of v0, and the old harness against this one
#   bash benchmarks/h100_run.sh clock    # the outside clock's GPU tests, keeping Nsight Compute's records (issue 31)
#   bash benchmarks/h100_run.sh turnaround  # v0, then one new version (v1) timed per rule, then their profiles
#                                           and bottlenecks (they follow the decisions); no-op reruns; start-up
#                                           (ALSO_IMAGE_PYTHON=1: v1's rules again without bytecode, as the image has it)
#   bash benchmarks/h100_run.sh rerun    # `kopt rerun v1` of the tree in docs/runs/h100-cuda/ (RERUN_FROM, RERUN_VERSION)
#   EXAMPLE=examples/gemm bash benchmarks/h100_run.sh example  # another example's whole graph in runs/<name>/
#                                        (EXAMPLE="examples/a examples/b": each in turn, GRAPH_TIMEOUT each)
#   bash benchmarks/h100_run.sh rebuild  # after `graph`: a dry run with other settings, a stale kernel, no-op reruns
#                                        (removes .snakemake/metadata: for the GPU machine's copy, not a checkout)
# Each phase is meant to fit one 10-minute device call; GRAPH_ARGS adds Snakemake arguments.
# To cut a pytest run short, `timeout -s INT -k 30 ...`: kopt turns SIGTERM into `Interrupted` inside
# the running test (kopt.measure.runner), so pytest fails that test and goes on (H200, 2026-11-28).
set -uo pipefail
phase=${1:-graph}
source benchmarks/gpu_env.sh
run() { echo "\$ $*"; /usr/bin/time -f "[wall %e s]" "$@"; }
run_example() {  # one example's whole graph in runs/<name>/; KEEP_RESULTS=1 resumes one a call's limit stopped
  local ws=$1 d=runs/$(basename "$1")
  [ -n "${KEEP_RESULTS:-}" ] || rm -rf "$d"
  {
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
    python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
    python3 -c "import flashinfer; print('flashinfer', flashinfer.__version__)" 2>&1 | tail -1
  } > "$OUT/machine.txt" 2>&1
  run timeout "${GRAPH_TIMEOUT:-560}" python3 -m snakemake --cores 1 -d "$d" --rerun-triggers input params code \
    ${GRAPH_ARGS:-} --config workspace="$PWD/$ws" >> "$OUT/snakemake.log" 2>&1
  echo "graph exit ($ws): $?" >> "$OUT/snakemake.log"
  grep -h "kopt:\|wall\|graph exit" "$OUT/snakemake.log" | tail -n 20
}
case "$phase" in
tests)
  {
    nvidia-smi
    nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
    python3 -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)"
    ncu --version
  } > "$OUT/machine.txt" 2>&1
  # the interpreter tests need numpy < 2.4, which the GPU image does not have: they run in CI. So do
  # five that assert the CPU's path (H100, 2026-11-26): the timeline without the clock's phases
  # (2), the CPU's ceilings, a reference limit that runs the interpreter, and the template with a
  # sitecustomize whose dirty torch.empty launches before the clock's warm-up (refused, rightly;
  # tests/gpu/test_gpu_template.py is that test on the GPU)
  CPU_PATH="not interpreter and not test_one_child_checks_then_times and not test_the_profile_child_starts_with_the_first"
  CPU_PATH="$CPU_PATH and not test_cpu_ceilings_are_not_a_physical_limit and not test_a_reference_too_big_for_the_device"
  CPU_PATH="$CPU_PATH and not test_the_skill_template_runs_as_it_is"
  run python3 -m pytest -q -s -p no:cacheprovider --durations=10 -k "$CPU_PATH" tests/gpu tests/measure/test_correctness.py tests/measure/test_cheats.py tests/measure/test_inputs.py tests/measure/test_verify.py tests/measure/test_reference.py tests/measure/test_interpreter.py tests/steps/test_bench.py tests/analysis/test_roofline.py tests/measure/test_runner.py tests/measure/test_device.py tests/steps/test_measure.py tests/measure/test_boundary.py > "$OUT/pytest_gpu.txt" 2>&1
  if [ -z "${SKIP_KERNELBENCH:-}" ]; then
    run python3 benchmarks/kernelbench_problems.py --out results/kernelbench > "$OUT/kernelbench.txt" 2>&1
    tar czf "$OUT/kernelbench.tgz" results/kernelbench
    grep -E "^== " "$OUT/kernelbench.txt"
  fi
  tail -n 3 "$OUT/pytest_gpu.txt"
  ;;
cuda)
  { nvcc --version; nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv; } > "$OUT/machine.txt" 2>&1
  # the wheel-finding test is for machines without a toolkit (CI); this one has /usr/local/cuda
  run python3 -m pytest -q -s -p no:cacheprovider -k "not wheels" tests/gpu/test_gpu_cuda.py tests/steps/test_build.py tests/measure/test_cuda.py > "$OUT/pytest_cuda.txt" 2>&1
  tail -n 3 "$OUT/pytest_cuda.txt"
  ;;
graph)
  [ -n "${KEEP_RESULTS:-}" ] || rm -rf results
  python3 -m snakemake --unlock > /dev/null 2>&1
  # the file sync may move modification times: rerun on changed inputs, not on mtimes
  run timeout "${GRAPH_TIMEOUT:-560}" python3 -m snakemake ${GRAPH_ARGS:-} --cores 1 --rerun-incomplete --rerun-triggers input params code >> "$OUT/snakemake.log" 2>&1
  echo "graph exit: $?" >> "$OUT/snakemake.log"
  if [ -f results/performance.md ]; then python3 -m snakemake --report results/report.html > "$OUT/report.log" 2>&1; fi
  tar czf "$OUT/results.tgz" --exclude='results/kernelbench' results/
  tail -n 3 "$OUT/snakemake.log"
  ;;
checks)
  run python3 benchmarks/rerun_spread.py --version "${SPREAD_VERSION:-v0}" --runs 3 > "$OUT/spread.txt" 2>&1
  run python3 benchmarks/rotation_overhead.py --old .old --version "${ROT_VERSION:-v1}" --rounds "${ROT_ROUNDS:-2}" --pool-sets "${ROT_POOLS:-}" > "$OUT/rotation.txt" 2>&1
  tail -n 5 "$OUT/spread.txt" "$OUT/rotation.txt"
  ;;
clock)
  { nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv; ncu --version; } > "$OUT/machine.txt" 2>&1
  KOPT_CLOCK_RECORDS="$PWD/clock_records" run python3 -m pytest -q -s -p no:cacheprovider --durations=10 \
    tests/gpu/test_gpu_clock.py tests/measure/test_outside_clock.py > "$OUT/pytest_clock.txt" 2>&1
  tar czf "$OUT/clock_records.tgz" clock_records 2>/dev/null
  tail -n 3 "$OUT/pytest_clock.txt"
  ;;
turnaround)
  rm -rf results .snakemake/metadata
  python3 -m snakemake --unlock > /dev/null 2>&1
  sm() { run python3 -m snakemake --cores 1 "$@" --rerun-triggers input params code; }
  sm results/v0/compare.json > "$OUT/v0.log" 2>&1
  sm results/v1/compare.json > "$OUT/v1.log" 2>&1
  sm results/v0/bottleneck.json results/v1/bottleneck.json > "$OUT/all.log" 2>&1  # what follows the decisions: profiles
  for v in v0 v1; do echo "== $v"; python3 benchmarks/turnaround.py "$v"; done > "$OUT/turnaround.txt" 2>&1
  for i in 1 2 3; do sm results/v1/compare.json; done > "$OUT/noop.log" 2>&1
  { run python3 -c "import snakemake.cli"; run python3 -m snakemake --version; } > "$OUT/startup.log" 2>&1
  python3 -m kopt.workspace.records results > "$OUT/records.txt" 2>&1
  tar czf "$OUT/results.tgz" results/
  if [ -n "${ALSO_IMAGE_PYTHON:-}" ]; then  # v1's rules again, every process compiling its imports as the image has it
    (
      unset PYTHONPYCACHEPREFIX
      export PYTHONDONTWRITEBYTECODE=1
      sm results/v1/compare.json --forcerun results/v1/correctness.json
      { run python3 -c "import snakemake.cli"; run python3 -m snakemake --version; }
    ) > "$OUT/v1_image_python.log" 2>&1
    { echo "== v1, every process compiling its imports (the image's setting)"; python3 benchmarks/turnaround.py v1; } >> "$OUT/turnaround.txt" 2>&1
  fi
  cat "$OUT/turnaround.txt" "$OUT/records.txt"
  grep -h "wall\|Nothing\|^kopt: v" "$OUT/v0.log" "$OUT/v1.log" "$OUT/all.log" "$OUT/noop.log" "$OUT/startup.log" "$OUT"/v1_image_python.log 2>/dev/null
  ;;
rerun)
  rm -rf results reruns
  cp -a "${RERUN_FROM:-docs/runs/h100-cuda/results}" results
  run python3 -m kopt.cli rerun "${RERUN_VERSION:-v1}" > "$OUT/rerun.txt" 2>&1
  tar czf "$OUT/reruns.tgz" --exclude='*/raw' --exclude='*/asm' --exclude='*/worktree' reruns/
  tail -n 25 "$OUT/rerun.txt"
  ;;
example)
  # EXAMPLE: one workspace, or several separated by spaces (each its own results tree under runs/)
  for ws in ${EXAMPLE:?set EXAMPLE=examples/<name>}; do
    run_example "$ws"
  done
  tar czf "$OUT/results.tgz" --exclude='*/raw' --exclude='*/asm' --exclude='*/recorded/files' runs/*/results
  ;;
rebuild)
  t=${REBUILD_TARGET:-results/v1/compare.json}
  touch /tmp/mark && sleep 1
  python3 -m snakemake --cores 1 -n "$t" --config noise_pct=7 > "$OUT/dryrun.log" 2>&1
  echo "files changed by the dry run: $(find results -newer /tmp/mark -type f | wc -l)" >> "$OUT/dryrun.log"
  # v0 changed but given its old time back (cp -p, tar, rsync -t), in a tree without .snakemake's records
  k=examples/softmax/kernels/v0.py
  cp -p "$k" /tmp/v0.py && echo "# changed, old time kept" >> "$k" && touch -r /tmp/v0.py "$k"
  rm -rf .snakemake/metadata
  run python3 -m snakemake --cores 1 "$t" --rerun-triggers mtime > "$OUT/stale.log" 2>&1
  for i in 1 2 3; do run python3 -m snakemake --cores 1 "$t" --rerun-triggers input params code; done > "$OUT/noop.log" 2>&1
  cp -p /tmp/v0.py "$k"  # the example as it was (its results are stale now, and say so on the next run)
  tar czf "$OUT/results.tgz" --exclude='results/kernelbench' results/
  grep -h "kopt:\|files changed\|wall\|Nothing" "$OUT/dryrun.log" "$OUT/stale.log" "$OUT/noop.log"
  ;;
esac
