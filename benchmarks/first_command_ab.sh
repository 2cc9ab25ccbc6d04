#!/usr/bin/env bash
# The README's first command in fresh clones, pip's cache off, alternated B A A B (this machine, CPU):
#   bash benchmarks/first_command_ab.sh <commit B> <commit A>
# One line per run: exit status, total seconds, Snakemake's elapsed time, the verdict lines printed.
set -u
src=$(git rev-parse --show-toplevel)
one() {  # $1 label $2 commit
  d=/tmp/ab-$1-$RANDOM; rm -rf $d; git clone -q "$src" $d && cd $d && git checkout -q "$2"
  export PIP_NO_CACHE_DIR=1
  s=$(date +%s.%N)
  bash -c 'bash tools/install.sh && .venv/bin/snakemake --cores 1 results/v3/compare.json results/final_report.md' > $d.log 2>&1
  rc=$?
  e=$(date +%s.%N)
  g=$(grep -o "Elapsed time: [0-9:.]*" $d.log | tail -1)
  echo "$1 $2 exit $rc total $(python3 -c "print(round($e-$s,1))") s; graph $g; lines $(grep -c '^kopt: v' $d.log)"
  cd /tmp; rm -rf $d
}
one B "$1"; one A "$2"; one A "$2"; one B "$1"
