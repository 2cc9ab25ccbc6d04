"""The GEMM example's TMA kernel (examples/gemm/kernels/v8.py) under a sweep of configurations, on
the shapes of the classes where the path trails cuBLAS (tall, small K) and the square ones, each
call timed the way the harness times a kernel (kopt.measure.timing.event_time_us: L2 flushed, the
spin queued, CUDA events), next to torch.matmul timed the same way in the same process. Checks
every result against torch.matmul first. Prints the median µs per (shape, configuration); the
graph then measures the version whose table this chose.

    PYTHONPATH=$PWD python3 benchmarks/probes/gemm_tiles.py [samples] [rounds]
"""

import importlib.util
import statistics
import sys

import torch

from kopt.measure.timing import Lab, event_time_us

spec = importlib.util.spec_from_file_location("v8", "examples/gemm/kernels/v8.py")
v8 = importlib.util.module_from_spec(spec)
spec.loader.exec_module(v8)

SHAPES = {
    "tall": [(32768, 512, 4096), (65536, 256, 4096)],
    "small_k": [(8192, 8192, 64), (16384, 16384, 128)],
    "square": [(4096, 4096, 4096), (8192, 8192, 8192)],
}
# (tile M, N, K, warps, stages, programs per SM (0: one per tile), flatten, subtile). The first
# sweep (docs/runs/h100-gemm/gemm_tiles.txt, round 1) tried v5's and v7's configurations and 128x128,
# 256x128, 64x256 tiles; flattening with a split epilogue and four stages won on every class there.
CANDIDATES = {
    "tall": [
        (128, 256, 64, 8, 3, 1, False, False),  # v5
        (128, 256, 64, 8, 4, 1, True, True),
        (128, 256, 64, 8, 4, 1, False, True),
        (128, 256, 32, 8, 6, 1, True, True),
        (128, 256, 32, 8, 8, 1, True, True),
        (128, 256, 128, 8, 2, 1, True, True),
    ],
    "small_k": [
        (128, 128, 64, 4, 3, 1, True, True),
        (128, 128, 64, 4, 4, 1, True, True),
        (128, 128, 64, 4, 2, 2, True, True),
        (128, 128, 64, 4, 3, 2, True, True),
        (128, 256, 64, 8, 3, 1, True, True),
        (128, 256, 64, 8, 4, 1, True, True),
        (64, 256, 64, 4, 4, 1, True, True),
        (64, 128, 64, 4, 3, 2, True, True),
        (64, 128, 64, 4, 3, 3, True, True),
    ],
    "square": [
        (128, 256, 64, 8, 3, 1, False, False),  # v5
        (128, 256, 64, 8, 3, 1, True, True),
        (128, 256, 64, 8, 4, 1, True, True),
        (128, 256, 32, 8, 6, 1, True, True),
    ],
}


def median_us(fn, lab: Lab, n: int) -> float:
    for _ in range(3):
        fn()
    return statistics.median(event_time_us(fn, "cuda", caches=lab).us for _ in range(n))


def shape_sweep(cls: str, M: int, N: int, K: int, n: int, lab: Lab) -> None:
    a = torch.randn(M, K, device="cuda").bfloat16()
    b = (torch.randn(K, N, device="cuda") / K**0.5).bfloat16()
    want = a @ b
    c = torch.empty_like(want)
    base = median_us(lambda: torch.matmul(a, b), lab, n)
    print(f"{cls} {M}x{N}x{K}: torch.matmul {base:.1f} us", flush=True)
    for cfg in CANDIDATES[cls]:
        try:
            c.fill_(float("nan"))
            v8.launch(a, b, c, cfg)
            err = (c.float() - want.float()).abs().max().item()
            us = median_us(lambda cfg=cfg: v8.launch(a, b, c, cfg), lab, n)
            print(f"  {cfg}: {us:8.1f} us  {base / us:5.3f}x torch  max err {err:.3g}", flush=True)
        except Exception as e:  # a configuration that does not compile or fit: say so, go on
            print(f"  {cfg}: failed: {type(e).__name__}: {str(e).splitlines()[0][:120]}", flush=True)


if __name__ == "__main__":
    samples = int(sys.argv[1]) if len(sys.argv) > 1 else 20
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    lab = Lab("cuda", flush_l2=True)
    for r in range(rounds):
        print(f"== round {r + 1}")
        for cls, shapes in SHAPES.items():
            for M, N, K in shapes:
                shape_sweep(cls, M, N, K, samples, lab)
                torch.cuda.empty_cache()
