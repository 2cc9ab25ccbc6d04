# call 3 (tree 2bccbf8 + the split probe + cuda_socket_types.py): which unix sockets CUDA holds
source benchmarks/gpu_env.sh
timeout -s INT -k 5 90 python3 benchmarks/probes/cuda_socket_types.py 2>&1 | tee $OUT/cuda_socket_types.txt | cut -c1-600
