"""v7: v5 with another small-K path. v5's profile of small K: 128 KiB of shared memory per block
(three stages and the C tile) and one persistent program per SM, so each SM had 4 warps and one
C tile's store at a time. Small K (at most 128: one or two K steps, nothing to pipeline) now
takes one stage and one program per tile: 64 KiB per block, three blocks per SM, three stores in
flight. Square and tall keep v5's persistent 128x256x64 path."""

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
):  # fmt: skip
    num_pid_m, num_pid_n = tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    for tile_id in tl.range(tl.program_id(0), num_pid_m * num_pid_n, programs):  # one tile each, or persistent
        pid_m, pid_n = _tile(tile_id, num_pid_m, num_pid_n, GROUP_M)
        off_m, off_n = pid_m * BLOCK_M, pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k in range(k_tiles):  # TMA pads the part of a tile past K (or M, N) with zeros
            a = a_desc.load([off_m, k * BLOCK_K])
            b = b_desc.load([k * BLOCK_K, off_n])
            acc = tl.dot(a, b, acc)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))  # clipped to C's bounds


def _config(K: int) -> tuple[dict, bool]:
    """Tile shape and launch options, and whether the programs are persistent (one per SM)."""
    if K <= 128:
        return {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 1}, False
    return {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}, True


def _sms(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 4  # the CPU interpreter: a few programs, each walking several tiles


def run_kernel(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> None:
    M, K = a.shape
    N = b.shape[1]
    cfg, persistent = _config(K)
    bm, bn, bk = cfg["BLOCK_M"], cfg["BLOCK_N"], cfg["BLOCK_K"]
    tiles = triton.cdiv(M, bm) * triton.cdiv(N, bn)
    programs = min(_sms(a.device), tiles) if persistent else tiles
    matmul_tma[(programs,)](
        TensorDescriptor.from_tensor(a, [bm, bk]),
        TensorDescriptor.from_tensor(b, [bk, bn]),
        TensorDescriptor.from_tensor(c, [bm, bn]),
        M, N, K, programs, GROUP_M=8, **cfg,
    )  # fmt: skip
