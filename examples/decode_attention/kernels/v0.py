"""v0, the baseline: one program per (sequence, query head). It walks the sequence's blocks
in order through the block table, one BLOCK_SIZE slice of keys and values at a time, with an
online softmax in fp32. Each of the H/H_KV query heads that share a key/value head reads it again."""

import triton
import triton.language as tl


@triton.jit
def paged_decode(
    q_ptr, k_ptr, v_ptr, bt_ptr, lens_ptr, o_ptr, scale,
    stride_kb, stride_ks, stride_kh, stride_bt, max_blocks,
    H: tl.constexpr, H_KV: tl.constexpr, D: tl.constexpr, BLOCK_SIZE: tl.constexpr,
):  # fmt: skip
    b, h = tl.program_id(0), tl.program_id(1)
    kv_h = h // (H // H_KV)
    d = tl.arange(0, D)
    s = tl.arange(0, BLOCK_SIZE)
    q = tl.load(q_ptr + (b * H + h) * D + d).to(tl.float32) * scale
    seq_len = tl.load(lens_ptr + b)
    m = tl.full([1], float("-inf"), tl.float32)
    l_sum = tl.zeros([1], tl.float32)
    acc = tl.zeros([D], tl.float32)
    for i in range(0, tl.cdiv(seq_len, BLOCK_SIZE)):
        block = tl.load(bt_ptr + b * stride_bt + i).to(tl.int64)
        offs = block * stride_kb + s[:, None] * stride_ks + kv_h * stride_kh + d[None, :]
        valid = (i * BLOCK_SIZE + s) < seq_len
        k = tl.load(k_ptr + offs, mask=valid[:, None], other=0.0).to(tl.float32)
        v = tl.load(v_ptr + offs, mask=valid[:, None], other=0.0).to(tl.float32)
        scores = tl.where(valid, tl.sum(k * q[None, :], axis=1), float("-inf"))
        m_new = tl.maximum(m, tl.max(scores, axis=0))
        p = tl.exp(scores - m_new)
        alpha = tl.exp(m - m_new)
        l_sum = l_sum * alpha + tl.sum(p, axis=0)
        acc = acc * alpha + tl.sum(p[:, None] * v, axis=0)
        m = m_new
    tl.store(o_ptr + (b * H + h) * D + d, (acc / l_sum).to(o_ptr.dtype.element_ty))


def run_kernel(q, k_cache, v_cache, block_table, seq_lens, o) -> None:
    B, H, D = q.shape
    _, block_size, H_KV, _ = k_cache.shape
    paged_decode[(B, H)](
        q, k_cache, v_cache, block_table, seq_lens, o, 1.0 / D**0.5,
        k_cache.stride(0), k_cache.stride(1), k_cache.stride(2), block_table.stride(0), block_table.shape[1],
        H=H, H_KV=H_KV, D=D, BLOCK_SIZE=block_size, num_warps=4,
    )  # fmt: skip
