#!/usr/bin/env bash
# One new version's turnaround, this tree against another (an older commit's files, e.g. from
# `git archive <commit> Snakefile rules scripts kopt config examples envs profiles report benchmarks
# | tar -x -C .old/base`), alternated in one device call so both see the same machine:
#   bash benchmarks/ab_turnaround.sh .old/base 2
# AB_TARGET=results/v1/bench.csv: v1's rule measure alone (the two trees' later rules may not read
# each other's records).
# Builds the example to v1 here, copies the tree to the other, then reruns v1's rules
# (--forcerun results/v1/correctness.json) in each tree in turn, printing each rule's seconds
# (benchmarks/turnaround.py) and each Snakemake run's wall time.
set -uo pipefail
other=$(cd "$1" && pwd) rounds=${2:-2} here=$PWD target=${AB_TARGET:-results/v1/compare.json}
source benchmarks/gpu_env.sh  # PYTHONPATH: each tree sets its own below
sm() {
  local tree=$1
  shift
  (cd "$tree" && PYTHONPATH=/tmp/site:$tree /usr/bin/time -f "[wall %e s]" python3 -m snakemake --cores 1 "$@" --rerun-triggers mtime)
}
rm -rf results .snakemake
sm "$here" "$target" > "$OUT/build.log" 2>&1
rm -rf "$other/results" "$other/.snakemake"
cp -a results "$other/results"
rm -rf "$other/results/benchmarks"  # its rules write their own timing records
for i in $(seq "$rounds"); do
  for tree in "$other" "$here"; do
    name=$([ "$tree" = "$here" ] && echo this || echo other)
    sm "$tree" "$target" --forcerun results/v1/correctness.json > "$OUT/round$i-$name.log" 2>&1
    echo "== round $i, $name tree ($tree): $(grep -h 'wall' "$OUT/round$i-$name.log")"
    cp "$tree/results/v1/bench.csv" "$OUT/round$i-$name.bench.csv" 2>/dev/null
    python3 "$here/benchmarks/turnaround.py" "$tree/results" v1
  done
done | tee "$OUT/ab.txt"
tar czf "$OUT/results.tgz" results/
