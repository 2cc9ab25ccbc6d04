"""KernelBench level 2, 63_Gemm_ReLU_Divide: a Triton ModelNew (KernelBench's solution style).

relu(x @ W^T + b) / divisor for x 1024 x 8192 and an nn.Linear(8192, 8192) with bias, fp32: one
Triton GEMM (the tutorial's tiled matmul, grouped launch order, 128 x 128 x 32 tiles, 8 warps,
3 stages) with the bias, the ReLU and the division fused into its epilogue. W is read as stored
(N x K, K contiguous). fp32 inputs under KernelBench's atol = rtol = 1e-4:
`input_precision="tf32x3"` (three TF32 tensor-core products per step: close to fp32's accuracy,
where plain TF32 is not).

ModelNew keeps the Model's nn.Linear (linear.weight, linear.bias) so it is given the Model's
weights by name.

On one H100 (triton.testing.do_bench, L2 flushed): 1.83 ms against torch eager's 2.72 ms (addmm,
ReLU, divide: three launches); max abs error 6.9e-6 against a float64 reference. 128 x 64 x 32 tiles
with 4 warps and 4 stages were as fast; 128 x 256 and 256 x 128 slower (2.8-3.3 ms).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def gemm_relu_divide_kernel(
    x_ptr, w_ptr, bias_ptr, out_ptr,
    M, N, K,
    stride_xm, stride_xk,
    stride_wn, stride_wk,
    stride_om, stride_on,
    divisor,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk  # [BLOCK_K, BLOCK_N] of W^T

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(x_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < k_left), other=0.0)
        b = tl.load(w_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    # epilogue: + bias, ReLU, / divisor (a true division, as the Model's)
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)
    acc = tl.maximum(acc + bias[None, :], 0.0) / divisor
    out_ptrs = out_ptr + offs_m[:, None] * stride_om + offs_n[None, :] * stride_on
    tl.store(out_ptrs, acc.to(out_ptr.dtype.element_ty), mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def triton_gemm_relu_divide(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, divisor: float) -> torch.Tensor:
    assert x.is_cuda and weight.is_cuda and bias.is_cuda, "Tensors must be on CUDA."
    M, K = x.shape
    N = weight.shape[0]
    bias = bias.contiguous()
    out = torch.empty((M, N), dtype=x.dtype, device=x.device)
    BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M = 128, 128, 32, 8
    grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N),)
    gemm_relu_divide_kernel[grid](
        x, weight, bias, out, M, N, K,
        x.stride(0), x.stride(1), weight.stride(0), weight.stride(1), out.stride(0), out.stride(1),
        float(divisor),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, num_warps=8, num_stages=3,
    )  # fmt: skip
    return out


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, divisor):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.divisor = divisor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return triton_gemm_relu_divide(x, self.linear.weight, self.linear.bias, self.divisor)
