# What each process holds on the GPU while v0 and v1 of KernelBench's GELU (4096 x 393216 fp32)
# go through the whole graph: nvidia-smi's per-process memory every 100 ms beside the run, and the
# run's logs and records (which phase asked for more than the device had).
# Usage (GPU machine): source benchmarks/gpu_env.sh && bash benchmarks/probes/kernel_memory.sh gelu
set -u
NAME=${1:-gelu}
R=/tmp/kbmem; rm -rf $R
nvidia-smi --query-compute-apps=timestamp,pid,process_name,used_memory --format=csv -lms 100 > $OUT/apps_$NAME.csv 2>&1 &
P1=$!
nvidia-smi --query-gpu=timestamp,memory.used,memory.total --format=csv -lms 100 > $OUT/gpu_$NAME.csv 2>&1 &
P2=$!
timeout ${2:-200} python3 benchmarks/kernelbench_h100.py --runs $R --budget ${2:-200} --only $NAME > $OUT/run_$NAME.txt 2>&1
echo "rc=$?" >> $OUT/run_$NAME.txt
kill $P1 $P2
tar czf $OUT/kbmem_$NAME.tgz -C $R --exclude='*.ncu-rep' --exclude='*.pt' . 2>/dev/null
ls -la $OUT
