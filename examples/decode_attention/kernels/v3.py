"""v3: v2 with TOKENS keys and values per loop step, gathered from several cache blocks at once
(each token's block looked up in the block table), and num_stages=3: each step moves 32 KB
instead of v2's 8 KB, and the next steps' gathers are in flight while this one computes."""

import torch
import triton
import triton.language as tl


@triton.jit
def paged_decode_split(
    q_ptr, k_ptr, v_ptr, bt_ptr, lens_ptr, part_o, part_ml, scale,
    stride_kb, stride_ks, stride_kh, stride_bt, tokens_per_split,
    H: tl.constexpr, H_KV: tl.constexpr, D: tl.constexpr, BLOCK_SIZE: tl.constexpr, G_PAD: tl.constexpr,
    SPLITS: tl.constexpr, TOKENS: tl.constexpr,
):  # fmt: skip
    b, kv_h, sp = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    G: tl.constexpr = H // H_KV
    g = tl.arange(0, G_PAD)
    d = tl.arange(0, D)
    t = tl.arange(0, TOKENS)
    heads = kv_h * G + g
    q = tl.load(q_ptr + (b * H + heads[:, None]) * D + d[None, :], mask=(g < G)[:, None], other=0.0)
    first = sp * tokens_per_split
    last = tl.minimum(first + tokens_per_split, tl.load(lens_ptr + b))
    m = tl.full([G_PAD], float("-inf"), tl.float32)
    l_sum = tl.zeros([G_PAD], tl.float32)
    acc = tl.zeros([G_PAD, D], tl.float32)
    for start in range(first, last, TOKENS):
        tok = start + t
        valid = tok < last
        block = tl.load(bt_ptr + b * stride_bt + tok // BLOCK_SIZE, mask=valid, other=0).to(tl.int64)
        offs = block[:, None] * stride_kb + (tok % BLOCK_SIZE)[:, None] * stride_ks + kv_h * stride_kh + d[None, :]
        k = tl.load(k_ptr + offs, mask=valid[:, None], other=0.0)
        v = tl.load(v_ptr + offs, mask=valid[:, None], other=0.0)
        scores = tl.dot(q, tl.trans(k)).to(tl.float32) * scale
        scores = tl.where(valid[None, :], scores, float("-inf"))
        m_new = tl.maximum(m, tl.max(scores, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        p = tl.exp(scores - m_safe[:, None])
        alpha = tl.exp(m - m_safe)
        l_sum = l_sum * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v).to(tl.float32)
        m = m_new
    row = (b * H + heads) * SPLITS + sp  # partials laid out (B, H, SPLITS, ...)
    tl.store(part_o + row[:, None] * D + d[None, :], acc, mask=(g < G)[:, None])
    tl.store(part_ml + row * 2, m, mask=g < G)
    tl.store(part_ml + row * 2 + 1, l_sum, mask=g < G)


@triton.jit
def merge_splits(part_o, part_ml, o_ptr, D: tl.constexpr, SPLITS: tl.constexpr):
    bh = tl.program_id(0)  # one (sequence, query head)
    sp = tl.arange(0, SPLITS)
    d = tl.arange(0, D)
    m = tl.load(part_ml + (bh * SPLITS + sp) * 2)
    l_sum = tl.load(part_ml + (bh * SPLITS + sp) * 2 + 1)
    m_max = tl.max(m, axis=0)
    w = tl.where(m == float("-inf"), 0.0, tl.exp(m - m_max))
    acc = tl.load(part_o + (bh * SPLITS + sp)[:, None] * D + d[None, :])
    out = tl.sum(acc * w[:, None], axis=0) / tl.sum(l_sum * w, axis=0)
    tl.store(o_ptr + bh * D + d, out.to(o_ptr.dtype.element_ty))


TOKENS = 64  # keys per loop step: 16 KB of keys and 16 KB of values in bf16 at D=128


def _sms(device: torch.device) -> int:
    return torch.cuda.get_device_properties(device).multi_processor_count if device.type == "cuda" else 132


def run_kernel(q, k_cache, v_cache, block_table, seq_lens, o) -> None:
    B, H, D = q.shape
    _, block_size, H_KV, _ = k_cache.shape
    steps = triton.cdiv(block_table.shape[1] * block_size, TOKENS)  # loop steps of the longest sequence
    # enough programs to fill every SM about four times over, each with whole loop steps
    splits = max(1, min(triton.next_power_of_2(triton.cdiv(4 * _sms(q.device), B * H_KV)), 64, triton.next_power_of_2(steps)))
    per_split = triton.cdiv(steps, splits) * TOKENS
    part_o = torch.empty(B, H, splits, D, dtype=torch.float32, device=q.device)
    part_ml = torch.empty(B, H, splits, 2, dtype=torch.float32, device=q.device)
    paged_decode_split[(B, H_KV, splits)](
        q, k_cache, v_cache, block_table, seq_lens, part_o, part_ml, 1.0 / D**0.5,
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), block_table.stride(0), per_split,
        H=H, H_KV=H_KV, D=D, BLOCK_SIZE=block_size, G_PAD=max(16, triton.next_power_of_2(H // H_KV)),
        SPLITS=splits, TOKENS=TOKENS, num_warps=4, num_stages=3,
    )  # fmt: skip
    merge_splits[(B * H,)](part_o, part_ml, o, D=D, SPLITS=splits, num_warps=4)
