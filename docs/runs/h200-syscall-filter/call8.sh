# call 8 (tree as call 4, same start): the bound's honest pair three times
source benchmarks/gpu_env.sh; for i in 1 2 3; do timeout -s INT -k 5 100 python3 -m pytest -q -s -p no:cacheprovider tests/gpu/test_gpu_bound.py -k honest > $OUT/gpu_tests_honest_$i.txt 2>&1; grep -h "resolution" $OUT/gpu_tests_honest_$i.txt | cut -c1-300; tail -1 $OUT/gpu_tests_honest_$i.txt; done
