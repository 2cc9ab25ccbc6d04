#!/usr/bin/env bash
# Same-machine A/B of rule measure (issue 42, point 8): the softmax's v0 and v1 from an empty results tree,
# f897aa0 (where the issue measured 27.7 s) and this tree alternated, N times each (default 2). First, here:
#   mkdir -p ab/f897aa0 && git archive f897aa0 Snakefile config envs examples/softmax kopt report rules scripts pyproject.toml | tar -x -C ab/f897aa0
# then on the GPU machine, from the repo root: bash benchmarks/ab_measure.sh [N] > $OUT/ab.txt
# Each run's timelines (rule measure's, in its log; its children's, in bench.json and profile.json,
# printed by benchmarks/turnaround.py) go to $OUT/ab-timelines.tgz.
source benchmarks/gpu_env.sh
root=$PWD
keep=/tmp/ab-keep; mkdir -p $keep
one() {  # $1: label, $2: tree
  local d=/tmp/ab-$1-$RANDOM; mkdir -p $d
  ( cd $2 && PYTHONPATH=/tmp/site:$2 timeout 110 python3 -m snakemake --cores 1 -s $2/Snakefile -d $d results/v1/compare.json \
      --config workspace=$2/examples/softmax > $keep/$1-$(basename $d).snakemake.log 2>&1 )
  for v in v0 v1; do
    s=$(awk 'NR==2{print $1}' $d/results/benchmarks/$v/measure.tsv 2>/dev/null)
    dec=$(python3 -c "import json;c=json.load(open('$d/results/$v/compare.json'));print(c['decision'],c['reason'])" 2>/dev/null)
    echo "$1 $v measure_s=$s $dec"
    { grep -h "timeline" $d/results/logs/$v/measure.log; python3 $root/benchmarks/turnaround.py $d/results $v; } \
      > $keep/$1-$(basename $d)-$v.timeline.txt 2>&1
  done
}
for i in $(seq 1 ${1:-2}); do one f897aa0 $root/ab/f897aa0; one head $root; done
tar czf $OUT/ab-timelines.tgz -C $keep .
