# call 1 (tree 2bccbf8): the probe under the syscall filter; if Nsight Compute's clock works under the strict
# filter, apply-filter.patch on the device's copy, then clocks, template, cheats and the daemon tests under it
source benchmarks/gpu_env.sh
echo "tree 2bccbf8" > $OUT/tree1.txt; nvidia-smi -L >> $OUT/tree1.txt; uname -r >> $OUT/tree1.txt; id -u >> $OUT/tree1.txt
timeout -s INT -k 5 120 python3 benchmarks/probes/abstract_socket_scope.py none "those+syscall filter" "those+strict filter" "those+strict filter+no capabilities" > $OUT/probe_filter.txt 2>&1
cat $OUT/probe_filter.txt | cut -c1-300
if grep -q "^ncu  those+strict filter  .*3 launch row" $OUT/probe_filter.txt; then
  git apply docs/runs/cpu-socket-review-c47363d/apply-filter.patch && echo "patch applied" | tee -a $OUT/tree1.txt
  timeout -s INT -k 5 330 python3 -m pytest -q -s -p no:cacheprovider --durations=5 tests/gpu/test_gpu_clock.py tests/gpu/test_gpu_template.py tests/gpu/test_gpu_cheats.py > $OUT/gpu_tests_clock_template_cheats.txt 2>&1
  echo "rc $?" >> $OUT/gpu_tests_clock_template_cheats.txt
  grep -rhoa 'landlock ABI [^"]*' /tmp/pytest-of-*/ 2>/dev/null | cut -c1-400 | sort | uniq -c | sort -rn | head -8 > $OUT/sandbox_lines.txt
  tail -6 $OUT/gpu_tests_clock_template_cheats.txt; cat $OUT/sandbox_lines.txt | cut -c1-300
  timeout -s INT -k 5 60 python3 -m pytest -q -p no:cacheprovider tests/measure/test_boundary.py tests/measure/test_syscall_filter.py 2>&1 | tail -5 | tee $OUT/boundary_filter.txt
fi
