# call 7 (tree as call 4, same start; .old/base = `git archive 2bccbf8 Snakefile rules scripts kopt config examples envs profiles report benchmarks`):
# one new version's turnaround, this tree (the filter and the capability drop) against 2bccbf8 (neither), alternated
timeout -s INT -k 5 500 bash benchmarks/ab_turnaround.sh .old/base 2 2>&1 | tail -40 | tee $OUT/ab_turnaround_filter.txt
