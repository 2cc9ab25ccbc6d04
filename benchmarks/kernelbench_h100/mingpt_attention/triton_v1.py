"""KernelBench level 3, 43_MinGPTCausalAttention: a Triton ModelNew (KernelBench's solution style).

minGPT's masked self-attention for x 128 x 512 x 768, 8 heads of 96, fp32: the two projections stay
torch's Linear; the attention between them is one Triton kernel in the manner of FlashAttention (a
64-row block of queries per program, 64-key blocks up to the diagonal only, an online softmax), so
the 128 x 8 x 512 x 512 score matrix (1 GiB) is never written, and the keys past the diagonal are
never read. q, k and v are read where c_attn wrote them (strided, no transposes) and y is written
in the (B, T, C) layout c_proj reads. Head size 96 is padded to 128 in registers (masked). fp32
under KernelBench's atol = rtol = 1e-4: `input_precision="tf32x3"` for both products. Dropout
(p = 0 in the file) is not applied: this solution is for its inference sizes only.

ModelNew keeps the Model's modules and its causal-mask buffer so it is given the Model's weights by name.

On one H200 through kopt's whole graph (Nsight Compute's GPU time, docs/runs/h200-across-levels-formats/):
9044.0 us a call against torch eager's 11546.2 us (1.28x), kept.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def causal_attention_kernel(
    qkv_ptr, y_ptr, T, C, H, HS, scale,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_D: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    b = bh // H
    h = bh % H
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, BLOCK_D)
    d_ok = offs_d < HS
    row = 3 * C  # c_attn's output row: q, k, v side by side
    base = qkv_ptr + b * T * row + h * HS
    q = tl.load(base + offs_m[:, None] * row + offs_d[None, :], mask=(offs_m[:, None] < T) & d_ok[None, :], other=0.0)

    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_D], tl.float32)
    hi = tl.minimum((pid_m + 1) * BLOCK_M, T)  # keys up to the block's last query
    for start in range(0, hi, BLOCK_N):
        cols = start + offs_n
        kv_mask = (cols[:, None] < T) & d_ok[None, :]
        k = tl.load(base + C + cols[:, None] * row + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k), input_precision="tf32x3") * scale
        s = tl.where((offs_m[:, None] >= cols[None, :]) & (cols[None, :] < T), s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(base + 2 * C + cols[:, None] * row + offs_d[None, :], mask=kv_mask, other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="tf32x3")
        m_i = m_new
    acc = acc / l_i[:, None]
    y_ptrs = y_ptr + b * T * C + offs_m[:, None] * C + h * HS + offs_d[None, :]
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=(offs_m[:, None] < T) & d_ok[None, :])


def causal_attention(qkv: torch.Tensor, n_head: int) -> torch.Tensor:
    B, T, C3 = qkv.shape
    C = C3 // 3
    hs = C // n_head
    y = torch.empty((B, T, C), dtype=qkv.dtype, device=qkv.device)
    BLOCK_M, BLOCK_N = 64, 64
    grid = (triton.cdiv(T, BLOCK_M), B * n_head)
    causal_attention_kernel[grid](
        qkv, y, T, C, n_head, hs, 1.0 / math.sqrt(hs),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_D=triton.next_power_of_2(hs), num_warps=4, num_stages=2,
    )  # fmt: skip
    return y


class ModelNew(nn.Module):
    def __init__(self, n_embd, n_head, attn_pdrop, resid_pdrop, max_seqlen):
        super().__init__()
        assert n_embd % n_head == 0
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.attn_dropout = nn.Dropout(attn_pdrop)
        self.resid_dropout = nn.Dropout(resid_pdrop)
        self.register_buffer("bias", torch.tril(torch.ones(max_seqlen, max_seqlen)).view(1, 1, max_seqlen, max_seqlen))
        self.n_head = n_head
        self.n_embd = n_embd

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        qkv = F.linear(x, self.c_attn.weight, self.c_attn.bias).contiguous()
        y = causal_attention(qkv, self.n_head)
        return F.linear(y, self.c_proj.weight, self.c_proj.bias)
