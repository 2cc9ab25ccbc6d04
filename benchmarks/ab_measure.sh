#!/usr/bin/env bash
# Same-machine A/B of rule measure (issue 42, point 8): the softmax's v0 and v1 from an empty results tree,
# f897aa0 (where the issue measured 27.7 s) and this tree alternated, twice each. First, here:
#   mkdir -p ab/f897aa0 && git archive f897aa0 Snakefile config envs examples/softmax kopt report rules scripts pyproject.toml | tar -x -C ab/f897aa0
# then on the GPU machine, from the repo root: bash benchmarks/ab_measure.sh > $OUT/ab.txt
source benchmarks/gpu_env.sh
root=$PWD
one() {  # $1: label, $2: tree
  local d=/tmp/ab-$1-$RANDOM; mkdir -p $d
  ( cd $2 && PYTHONPATH=/tmp/site:$2 timeout 110 python3 -m snakemake --cores 1 -s $2/Snakefile -d $d results/v1/compare.json \
      --config workspace=$2/examples/softmax > $OUT/ab-$1-$(basename $d).log 2>&1 )
  for v in v0 v1; do
    s=$(awk 'NR==2{print $1}' $d/results/benchmarks/$v/measure.tsv 2>/dev/null)
    dec=$(python3 -c "import json;c=json.load(open('$d/results/$v/compare.json'));print(c['decision'],c['reason'])" 2>/dev/null)
    echo "$1 $v measure_s=$s $dec"
  done
}
for i in 1 2; do one f897aa0 $root/ab/f897aa0; one head $root; done
