"""Row softmax, two passes over each row in blocks: the maximum and the sum of exponentials, then
the output. Reads each row twice."""

import torch
import triton
import triton.language as tl


@triton.jit
def _softmax(x_ptr, y_ptr, N, stride, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    m = tl.full([BLOCK], float("-inf"), tl.float32)
    s = tl.zeros([BLOCK], tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=float("-inf"))
        new = tl.maximum(m, x)
        s = s * tl.exp(m - new) + tl.where(cols < N, tl.exp(x - new), 0.0)
        m = new
    top = tl.max(m, 0)
    total = tl.sum(s * tl.exp(m - top), 0)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=0.0)
        tl.store(y_ptr + row * stride + cols, tl.exp(x - top) / total, mask=cols < N)


def softmax(x: torch.Tensor) -> torch.Tensor:
    y = torch.empty_like(x)
    _softmax[(x.shape[0],)](x, y, x.shape[1], x.stride(0), BLOCK=256)
    return y
