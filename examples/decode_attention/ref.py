"""Decode attention over a paged KV cache: one new query token per sequence attends to every
cached key and value of its sequence (the decode step of LLM serving, as in vLLM's paged
attention). Memory-bound: each step streams the whole KV cache once.

q: (B, H, D); k_cache, v_cache: (num_blocks, BLOCK_SIZE, H_KV, D), the blocks of all sequences
in one pool; block_table: (B, max_blocks) int32, the pool blocks of each sequence in order;
seq_lens: (B,) int32. H query heads share H_KV key/value heads (grouped-query attention). The
kernels write o: (B, H, D).
"""

import math

import torch

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def setup(seed, B, H, H_KV, D, ctx, context, block_size, dtype="bfloat16"):
    torch.manual_seed(seed)
    dt = DTYPES[dtype]
    blocks_per_seq = math.ceil(ctx / block_size)
    num_blocks = B * blocks_per_seq
    q = torch.randn(B, H, D, dtype=torch.float32).to(dt)
    k_cache = torch.randn(num_blocks, block_size, H_KV, D, dtype=torch.float32).to(dt)
    v_cache = torch.randn(num_blocks, block_size, H_KV, D, dtype=torch.float32).to(dt)
    # every sequence's blocks scattered over the pool, as an allocator leaves them
    block_table = torch.randperm(num_blocks, dtype=torch.int64).to(torch.int32).reshape(B, blocks_per_seq)
    seq_lens = torch.full((B,), ctx, dtype=torch.int32)
    inputs = {"q": q, "k_cache": k_cache, "v_cache": v_cache, "block_table": block_table, "seq_lens": seq_lens}
    return {"inputs": inputs, "outputs": ["o"]}


def reference(q, k_cache, v_cache, block_table, seq_lens):
    """Gathers each sequence's keys and values from its blocks, then torch's
    scaled_dot_product_attention with grouped-query heads (one sequence length for the batch)."""
    H, H_KV = q.shape[1], k_cache.shape[2]
    ctx = int(seq_lens.max())
    idx = block_table.long()
    k = k_cache[idx].flatten(1, 2)[:, :ctx]  # (B, ctx, H_KV, D)
    v = v_cache[idx].flatten(1, 2)[:, :ctx]
    k, v = k.transpose(1, 2), v.transpose(1, 2)  # (B, H_KV, ctx, D)
    o = torch.nn.functional.scaled_dot_product_attention(q.unsqueeze(2), k, v, enable_gqa=H != H_KV)
    return o.squeeze(2)  # (B, H, D)


def bytes_moved(B, H, H_KV, D, ctx, context, block_size, dtype="bfloat16"):
    """Compulsory traffic: every cached key and value of every sequence once, q read, o written."""
    size = torch.tensor([], dtype=DTYPES[dtype]).element_size()
    return (2 * B * ctx * H_KV * D + 2 * B * H * D) * size


def flops(B, H, H_KV, D, ctx, context, block_size, dtype="bfloat16"):
    """q.K^T and P.V: two multiply-adds per head, key and dimension."""
    return 4 * B * H * ctx * D
