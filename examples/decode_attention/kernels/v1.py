"""v1: one program per (sequence, key/value head) serves all H/H_KV query heads of its group:
each key and value is read once instead of once per query head, and the group's scores and
outputs are tensor-core dots (the group padded to 16 rows)."""

import triton
import triton.language as tl


@triton.jit
def paged_decode_gqa(
    q_ptr, k_ptr, v_ptr, bt_ptr, lens_ptr, o_ptr, scale,
    stride_kb, stride_ks, stride_kh, stride_bt,
    H: tl.constexpr, H_KV: tl.constexpr, D: tl.constexpr, BLOCK_SIZE: tl.constexpr, G_PAD: tl.constexpr,
):  # fmt: skip
    b, kv_h = tl.program_id(0), tl.program_id(1)
    G: tl.constexpr = H // H_KV
    g = tl.arange(0, G_PAD)
    d = tl.arange(0, D)
    s = tl.arange(0, BLOCK_SIZE)
    heads = kv_h * G + g
    q = tl.load(q_ptr + (b * H + heads[:, None]) * D + d[None, :], mask=(g < G)[:, None], other=0.0)
    seq_len = tl.load(lens_ptr + b)
    m = tl.full([G_PAD], float("-inf"), tl.float32)
    l_sum = tl.zeros([G_PAD], tl.float32)
    acc = tl.zeros([G_PAD, D], tl.float32)
    for i in range(0, tl.cdiv(seq_len, BLOCK_SIZE)):
        block = tl.load(bt_ptr + b * stride_bt + i).to(tl.int64)
        offs = block * stride_kb + s[:, None] * stride_ks + kv_h * stride_kh + d[None, :]
        valid = (i * BLOCK_SIZE + s) < seq_len
        k = tl.load(k_ptr + offs, mask=valid[:, None], other=0.0)
        v = tl.load(v_ptr + offs, mask=valid[:, None], other=0.0)
        scores = tl.dot(q, tl.trans(k)).to(tl.float32) * scale  # (G_PAD, BLOCK_SIZE)
        scores = tl.where(valid[None, :], scores, float("-inf"))
        m_new = tl.maximum(m, tl.max(scores, axis=1))
        p = tl.exp(scores - m_new[:, None])
        alpha = tl.exp(m - m_new)
        l_sum = l_sum * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v).to(tl.float32)
        m = m_new
    out = (acc / l_sum[:, None]).to(o_ptr.dtype.element_ty)
    tl.store(o_ptr + (b * H + heads[:, None]) * D + d[None, :], out, mask=(g < G)[:, None])


def run_kernel(q, k_cache, v_cache, block_table, seq_lens, o) -> None:
    B, H, D = q.shape
    _, block_size, H_KV, _ = k_cache.shape
    paged_decode_gqa[(B, H_KV)](
        q, k_cache, v_cache, block_table, seq_lens, o, 1.0 / D**0.5,
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), block_table.stride(0),
        H=H, H_KV=H_KV, D=D, BLOCK_SIZE=block_size, G_PAD=max(16, triton.next_power_of_2(H // H_KV)), num_warps=4,
    )  # fmt: skip
