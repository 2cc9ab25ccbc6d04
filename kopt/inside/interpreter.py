"""What the Triton CPU interpreter cannot run, said in one line (in the kernel's process, CPU only).

* ``@triton.autotune`` benchmarks its configs through a GPU driver: on the interpreter it fails
  with "0 active drivers".
* ``tl.dot`` on bfloat16: numpy has no bfloat16, the interpreter stores it as uint16 and
  multiplies the raw bits, so the result is silently wrong. ``install`` makes such a dot compute
  as the tensor cores do: the bfloat16 inputs widened to float32 exactly (a bfloat16 is the top
  half of a float32), multiplied and accumulated in float32 (a product of two bfloat16 fits a
  float32 exactly); a bfloat16 accumulator is widened too and the result rounded back to it.
  Its cast from float32 to bfloat16 truncates; ``install`` makes it round to nearest even, as
  the GPU does.
* Loops with a runtime bound need numpy < 2.4 with triton 3.6 (triton-lang/triton#9171): the
  install pins it; a kernel that still meets it gets a line saying so.
"""

from __future__ import annotations

import os

_KERNEL = {"path": "the kernel"}


def install(kernel_path: str) -> None:
    """Make the interpreter compute what it would compute wrongly (bfloat16 tl.dot, and casts from
    float32 to bfloat16)."""
    _KERNEL["path"] = (
        os.path.relpath(kernel_path) if kernel_path and not kernel_path.startswith("torch:") else kernel_path
    )
    try:
        import triton.language as tl
        from triton.runtime.interpreter import InterpreterBuilder
    except ImportError:
        return
    original = InterpreterBuilder.create_dot
    if getattr(original, "kopt_guard", False):
        return

    def create_dot(self, a, b, d, *args, **kwargs):
        if tl.bfloat16 not in (a.dtype.scalar, b.dtype.scalar, d.dtype.scalar):
            return original(self, a, b, d, *args, **kwargs)
        out = original(self, widened(a), widened(b), widened(d), *args, **kwargs)
        return rounded_to_bf16(out) if d.dtype.scalar == tl.bfloat16 else out

    create_dot.kopt_guard = True
    InterpreterBuilder.create_dot = create_dot
    cast = InterpreterBuilder.cast_impl

    def cast_impl(self, src, dst_type):
        if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
            return rounded_to_bf16(src)
        return cast(self, src, dst_type)

    InterpreterBuilder.cast_impl = cast_impl


def widened(h):
    """A bfloat16 tensor of the interpreter (its raw bits in uint16) as float32, exactly; any other as it is."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    if h.dtype.scalar != tl.bfloat16:
        return h
    return TensorHandle((h.data.astype(np.uint32) << 16).view(np.float32), tl.float32)


def rounded_to_bf16(h):
    """A float32 tensor of the interpreter rounded to bfloat16 to nearest even, as the GPU rounds
    (the interpreter's own cast truncates: 13.106 became 13.0625, not 13.125)."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    x = np.ascontiguousarray(h.data, dtype=np.float32)
    u = x.view(np.uint32)
    rounded = ((u + np.uint32(0x7FFF) + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return TensorHandle(np.where(np.isnan(x), np.uint16(0x7FC0), rounded), tl.bfloat16)


def _chain(e: BaseException):
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def _autotuned(kernel) -> bool:
    return any(type(obj).__name__ == "Autotuner" for obj in list(getattr(kernel, "__globals__", {}).values()))


def explain(e: BaseException, kernel) -> str | None:
    """One line for an exception the interpreter raised on something it cannot run, else None."""
    path = _KERNEL["path"]
    texts = [f"{type(x).__name__}: {x}" for x in _chain(e)]
    if _autotuned(kernel) and any("active drivers" in t for t in texts):
        return (
            f"{path}: @triton.autotune cannot run on the Triton CPU interpreter (it benchmarks configs through a "
            "GPU driver): on the CPU call the kernel with one fixed config (e.g. when "
            "os.environ.get('TRITON_INTERPRET') == '1'), or run this version on a GPU"
        )
    if any("only 0-dimensional arrays can be converted" in t for t in texts):
        return (
            f"{path}: the Triton interpreter failed on numpy >= 2.4 (triton-lang/triton#9171): install "
            "'numpy<2.4' (tools/install.sh does)"
        )
    return None
