#!/usr/bin/env bash
# Probe (issue 44 pt 2): the judge's GPU memory as each config's pool is sized, softmax example,
# v1 measured first from an empty tree (the out-of-memory case), then v0, then v1 after v0.
#   bash benchmarks/probes/trial_memory.sh > $OUT/trial_memory.txt
source benchmarks/gpu_env.sh
d=/tmp/probe-trial; rm -rf $d; mkdir -p $d
for t in ${PROBE_TARGETS:-results/v1/bench.json results/v0/bench.json}; do
  PROBE_TRIAL=1 PYTHONPATH=$PWD/benchmarks/probes/trial_memory:$PYTHONPATH timeout 120 python3 -m snakemake --cores 1 \
    -d $d $t --config workspace=$PWD/examples/softmax > $OUT/probe-$(basename $(dirname $t)).log 2>&1
  v=$(basename $(dirname $t)); echo "== $v first=$t measure_s=$(awk 'NR==2{print $1}' $d/results/benchmarks/$v/measure.tsv)"
  grep -h PROBE $d/results/logs/$v/measure.log
  python3 -c "import json;d=json.load(open('$d/results/$v/bench.json'));print({k[:16]:v['pool']['why'] for k,v in d['inputs']['per_config'].items()})"
done
