"""v0: a tiled GEMM with the bias add and ReLU fused into its epilogue; the K loop has a runtime
bound; programs are launched in grouped order so neighbouring tiles share weight columns in L2
(the Triton matmul tutorial's scheme)."""

import torch
import triton
import triton.language as tl


@triton.jit
def gemm_add_relu(x_ptr, w_ptr, b_ptr, out_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP: tl.constexpr):
    pid = tl.program_id(0)
    n_m, n_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
    group = pid // (GROUP * n_n)
    first_m = group * GROUP
    rows = min(n_m - first_m, GROUP)
    pm = first_m + (pid % (GROUP * n_n)) % rows
    pn = (pid % (GROUP * n_n)) // rows
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        kk = k + rk
        a = tl.load(x_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(w_ptr + rn[None, :] * K + kk[:, None], mask=(rn[None, :] < N) & (kk[:, None] < K), other=0.0)
        acc += tl.dot(a, b)
    acc += tl.load(b_ptr + rn, mask=rn < N, other=0.0)[None, :]
    acc = tl.maximum(acc, 0.0)
    tl.store(out_ptr + rm[:, None] * N + rn[None, :], acc.to(out_ptr.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))


def run_kernel(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, out: torch.Tensor) -> None:
    M, K = x.shape
    N = weight.shape[0]
    BM, BN, BK = (128, 128, 32) if x.is_cuda else (16, 16, 32)
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN),)
    gemm_add_relu[grid](x, weight, bias, out, M, N, K, BM=BM, BN=BN, BK=BK, GROUP=8, num_warps=8 if x.is_cuda else 4, num_stages=3 if x.is_cuda else 1)
