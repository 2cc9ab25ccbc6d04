"""v8: v5's TMA kernel with its tile loop flattened (the loads of the next tile start while this
tile's dot finishes: with one or two K steps per tile, as in small K, an unflattened loop has
nothing to overlap) and C stored in two halves (half the shared memory for the epilogue).
Which tiles, warps and stages serve which shapes is a table (_CONFIGS), chosen from the sweep
of benchmarks/probes/gemm_tiles.py on the H100 (docs/runs/h100-gemm/gemm_tiles.txt)."""

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def _tile(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    per_group = GROUP_M * num_pid_n
    first_m = (tile_id // per_group) * GROUP_M
    group_size = min(num_pid_m - first_m, GROUP_M)
    return first_m + (tile_id % per_group) % group_size, (tile_id % per_group) // group_size


@triton.jit
def matmul_tma(
    a_desc, b_desc, c_desc, M, N, K, programs,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
    FLATTEN: tl.constexpr, SUBTILE: tl.constexpr,
):  # fmt: skip
    num_pid_m, num_pid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    tile_c = tl.program_id(0) - programs  # the tile the epilogue writes (the loads may run ahead)
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, programs, flatten=FLATTEN):
        pid_m, pid_n = _tile(tile_id, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(k_tiles):  # TMA pads the part of a tile past K (or M, N) with zeros
            a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])
            b = b_desc.load([k * BLOCK_K, pid_n * BLOCK_N])
            acc = tl.dot(a, b, acc)
        tile_c += programs
        pid_m, pid_n = _tile(tile_c, num_pid_m, num_pid_n, GROUP_M)
        if SUBTILE:  # two stores of BLOCK_N / 2 columns each
            halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], left.to(c_desc.dtype))
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N + BLOCK_N // 2], right.to(c_desc.dtype))
        else:
            c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))  # clipped to C


# (largest K, largest N) -> (tile M, N, K, warps, stages, programs per SM (0: one per tile),
# flatten, subtile); the first row that matches serves. From the sweep (gemm_tiles.txt, two rounds):
# K <= 64 wants narrow 64x256 tiles with four stages (52.0-52.3 us against 53.6-58.0 for 128x128
# and 54.3-55.1 for 128x256 at 8192x8192x64); K = 128 wants 128x256 with three (225.4-226.3 us,
# 128x128 242.6-269.8); tall wants four stages (224.8-225.8 us against 246.5-246.9 for v5's three
# unflattened at 65536x256x4096); the squares keep three (1433.1-1450.9 us at 8192^3, four
# stages 1459.8-1486.7).
_CONFIGS = [
    (64, None, (64, 256, 64, 4, 4, 1, True, True)),
    (128, None, (128, 256, 64, 8, 3, 1, True, True)),
    (None, 512, (128, 256, 64, 8, 4, 1, True, True)),
    (None, None, (128, 256, 64, 8, 3, 1, True, True)),
]


def _config(k: int, n: int) -> tuple:
    return next(c for k_max, n_max, c in _CONFIGS if (k_max is None or k <= k_max) and (n_max is None or n <= n_max))


def _sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4  # the CPU interpreter: a few programs, each walking several tiles


def launch(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, cfg: tuple) -> None:
    """C = A @ B with one configuration of the kernel (the sweep calls this directly)."""
    bm, bn, bk, warps, stages, per_sm, flatten, subtile = cfg
    M, K = a.shape
    N = b.shape[1]
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    programs = min(per_sm * _sms(a.device), tiles) if per_sm else tiles
    matmul_tma[(programs,)](
        TensorDescriptor.from_tensor(a, [bm, bk]),
        TensorDescriptor.from_tensor(b, [bk, bn]),
        TensorDescriptor.from_tensor(c, [bm, bn // 2 if subtile else bn]),
        M, N, K, programs, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=8,
        FLATTEN=flatten, SUBTILE=subtile, num_warps=warps, num_stages=stages,
    )  # fmt: skip


def run_kernel(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    launch(a, b, c, _config(a.shape[1], b.shape[1]))
