# call 2 (tree 2bccbf8 + the probe's variants split: no connect, stream only, no capabilities with the plain filter)
source benchmarks/gpu_env.sh
timeout -s INT -k 5 150 python3 benchmarks/probes/abstract_socket_scope.py none "those+syscall filter" "those+filter, no connect" "those+filter, stream only" "those+filter+no capabilities" > $OUT/probe_filter_split.txt 2>&1
cut -c1-120 $OUT/probe_filter_split.txt; grep -o "RuntimeError.*\|capabilities dropped[^|]*" $OUT/probe_filter_split.txt | sort | uniq -c
which strace ltrace gdb 2>&1 | head -3
