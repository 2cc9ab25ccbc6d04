# call 5 (same tree as call 4, same start): the daemon/filter/capability tests as root, then the rest of tests/gpu under the filter
source benchmarks/gpu_env.sh
timeout -s INT -k 5 60 python3 -m pytest -q -p no:cacheprovider tests/measure/test_boundary.py -k "daemon or reachable" tests/measure/test_syscall_filter.py tests/measure/test_capabilities.py 2>&1 | tail -3 | tee $OUT/boundary_filter_caps.txt
timeout -s INT -k 5 330 python3 -m pytest -q -s -p no:cacheprovider --durations=5 tests/gpu/test_gpu_memory.py tests/gpu/test_gpu_command.py tests/gpu/test_gpu_cuda.py tests/gpu/test_gpu_formats.py > $OUT/gpu_tests_rest.txt 2>&1
echo "rc $?" >> $OUT/gpu_tests_rest.txt; tail -4 $OUT/gpu_tests_rest.txt
timeout -s INT -k 5 170 python3 -m pytest -q -s -p no:cacheprovider --durations=5 tests/gpu/test_gpu_bound.py > $OUT/gpu_tests_bound.txt 2>&1
echo "rc $?" >> $OUT/gpu_tests_bound.txt; tail -4 $OUT/gpu_tests_bound.txt
