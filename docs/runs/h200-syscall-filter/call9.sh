# call 9 (a new start; tree: 7ea9ab4 + the third review's fixes: the filter refuses leases, POSIX queues, the keyring,
# inotify, clone3 (ENOSYS) and clone into namespaces, PTRACE_TRACEME, a terminal's changing ioctls; the kernel's
# standard output and error moved to its scratch, copied to the judge's log at its end)
source benchmarks/gpu_env.sh
timeout -s INT -k 5 40 python3 -m pytest -q -p no:cacheprovider tests/measure/test_syscall_filter.py tests/measure/test_capabilities.py tests/measure/test_boundary.py -k "filter or capabilit or judges_log or daemon" 2>&1 | tail -3 | tee $OUT/review32_filter_tests.txt
timeout -s INT -k 5 40 python3 benchmarks/probes/abstract_socket_scope.py none "those+strict filter+no capabilities" 2>&1 | cut -c1-250 | tee $OUT/review32_probe.txt
timeout -s INT -k 5 235 python3 -m pytest -q -s -p no:cacheprovider --durations=5 tests/gpu/test_gpu_clock.py tests/gpu/test_gpu_template.py tests/gpu/test_gpu_cheats.py > $OUT/review32_clock_template_cheats.txt 2>&1
echo "rc $?" >> $OUT/review32_clock_template_cheats.txt; tail -4 $OUT/review32_clock_template_cheats.txt
grep -rhoa 'landlock ABI [^"]*' /tmp/pytest-of-*/ 2>/dev/null | cut -c1-700 | sort | uniq -c | sort -rn | head -4 > $OUT/review32_sandbox_lines.txt
grep -c "the kernel's process's output" $OUT/review32_clock_template_cheats.txt >> $OUT/review32_sandbox_lines.txt
