#!/usr/bin/env bash
# The bound's honest GPU tests (an honest copy is a tie, an honest gain is kept) in several trees,
# alternated on one machine start, so a failure can be told from the machine's pace:
#   bash benchmarks/honest_bound_ab.sh 3 ab/base .        # rounds, then the trees
# where ab/base holds another commit's tree (`git archive <commit> kopt tests config examples envs
# profiles report rules scripts Snakefile benchmarks pyproject.toml | tar -x -C ab/base`). Each
# run prints the kernel process's host time per call against the GPU time and the bound's
# resolution per config (the tests' own lines), then its verdicts; all of it goes to $OUT.
set -uo pipefail
rounds=$1
shift
source benchmarks/gpu_env.sh
for i in $(seq "$rounds"); do
  for tree in "$@"; do
    tree=$(cd "$tree" && pwd)
    name=$(basename "$tree")
    log="$OUT/honest-round$i-$name.txt"
    (cd "$tree" && PYTHONPATH=/tmp/site:$tree timeout -s INT -k 10 150 python3 -m pytest -q -s -p no:cacheprovider \
      tests/gpu/test_gpu_bound.py -k "honest_copy or honest_gain" > "$log" 2>&1)
    echo "== round $i, $name ($tree)"
    grep -E "host time per call|passed|failed" "$log"
  done
done | tee "$OUT/honest_bound_ab.txt"
