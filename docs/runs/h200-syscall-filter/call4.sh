# call 4 (tree: 2bccbf8 + the filter applied in the sandbox: strict = no connect, no unix datagram
# (seqpacket allowed: CUDA's), on every thread (TSYNC), then every capability dropped): the probe, then
# clocks, template, cheats under it, the sandbox lines, the boundary/filter/capability tests as root
source benchmarks/gpu_env.sh
timeout -s INT -k 5 100 python3 benchmarks/probes/abstract_socket_scope.py none "those+syscall filter" "those+strict filter" "those+strict filter+no capabilities" > $OUT/probe_strict_seqpacket.txt 2>&1
cut -c1-200 $OUT/probe_strict_seqpacket.txt
timeout -s INT -k 5 360 python3 -m pytest -q -s -p no:cacheprovider --durations=5 tests/gpu/test_gpu_clock.py tests/gpu/test_gpu_template.py tests/gpu/test_gpu_cheats.py > $OUT/gpu_tests_clock_template_cheats.txt 2>&1
echo "rc $?" >> $OUT/gpu_tests_clock_template_cheats.txt
tail -8 $OUT/gpu_tests_clock_template_cheats.txt
grep -rhoa 'landlock ABI [^"]*' /tmp/pytest-of-*/ 2>/dev/null | cut -c1-600 | sort | uniq -c | sort -rn | head -8 > $OUT/sandbox_lines.txt; cut -c1-400 $OUT/sandbox_lines.txt
timeout -s INT -k 5 90 python3 -m pytest -q -p no:cacheprovider tests/measure/test_boundary.py tests/measure/test_syscall_filter.py tests/measure/test_capabilities.py 2>&1 | tail -5 | tee $OUT/boundary_filter_caps.txt
