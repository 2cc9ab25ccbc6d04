#!/usr/bin/env bash
# Issue 42, point 1: an example's v0 and v1 through the whole graph, RUNS times, each a separate
# Snakemake run from an empty results tree (every default; the GPU machine, from the repo root):
#   EXAMPLE=examples/softmax RUNS=3 bash benchmarks/fresh_runs.sh
# Each run's compare.json and bench.csv go to $OUT/fresh/<example>/<run>/; the last lines say each decision.
set -uo pipefail
source benchmarks/gpu_env.sh
ex=${EXAMPLE:?set EXAMPLE=examples/<name>}; name=$(basename "$ex")
for i in $(seq 1 "${RUNS:-3}"); do
  d=/tmp/fresh-$name-$i; rm -rf "$d"; mkdir -p "$d"
  start=$(date +%s)
  timeout "${RUN_TIMEOUT:-280}" python3 -m snakemake --cores 1 -d "$d" results/v1/compare.json \
    --config workspace="$PWD/$ex" > "$OUT/fresh-$name-$i.log" 2>&1
  rc=$?
  mkdir -p "$OUT/fresh/$name/$i"
  for v in v0 v1; do
    cp "$d/results/$v/compare.json" "$OUT/fresh/$name/$i/${v}_compare.json" 2>/dev/null
    cp "$d/results/$v/bench.csv" "$OUT/fresh/$name/$i/${v}_bench.csv" 2>/dev/null
    cp "$d/results/$v/bench.json" "$OUT/fresh/$name/$i/${v}_bench.json" 2>/dev/null
    # where rule measure's seconds went: the job's marks, then its children's timelines
    grep -h "rule measure's timeline" "$d/results/logs/$v/measure.log" 2>/dev/null
    python3 benchmarks/turnaround.py "$d/results" "$v" > "$OUT/fresh/$name/$i/${v}_turnaround.txt" 2>&1
  done
  python3 - "$d/results/v1/compare.json" "$name" "$i" "$rc" "$(( $(date +%s) - start ))" "$OUT/fresh-$name-$i.log" <<'PY'
import json, re, sys
from datetime import datetime
path, name, i, rc, secs, log = sys.argv[1:]
# each rule measure's seconds, from Snakemake's time stamps (the job's start, its "Finished" line)
stamp, started, took = None, {}, []
for line in open(log):
    if m := re.match(r"\[(\w{3} \w{3} +\d+ [\d:]+ \d{4})\]", line):
        stamp = datetime.strptime(m.group(1), "%a %b %d %H:%M:%S %Y")
    elif line.startswith("localrule measure"):
        started["measure"] = stamp
    elif "(Rule: measure)" in line and "measure" in started:
        took.append(int((stamp - started.pop("measure")).total_seconds()))
try:
    c = json.load(open(path))
    rows = "; ".join(f"{r['class']} {r['delta_pct']:+.1f}% {r['verdict']}" for r in c["per_class"])
    print(f"{name} run {i}: exit {rc}, {secs} s (rule measure v0, v1: {took} s), v1 {c['decision']} ({c['reason']}): {rows}")
except OSError:
    print(f"{name} run {i}: exit {rc}, {secs} s, no compare.json")
PY
done
