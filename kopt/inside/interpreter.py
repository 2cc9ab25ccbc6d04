"""What the Triton CPU interpreter cannot run, said in one line (in the kernel's process, CPU only).

* ``@triton.autotune`` benchmarks its configs through a GPU driver: on the interpreter it fails
  with "0 active drivers".
* ``tl.dot`` on bfloat16: numpy has no bfloat16, the interpreter stores it as uint16 and
  multiplies the raw bits, so the result is silently wrong. ``install`` makes such a dot raise.
* Loops with a runtime bound need numpy < 2.4 with triton 3.6 (triton-lang/triton#9171): the
  install pins it; a kernel that still meets it gets a line saying so.
"""

from __future__ import annotations

import os

_KERNEL = {"path": "the kernel"}


class InterpreterUnsupported(RuntimeError):
    pass


def install(kernel_path: str) -> None:
    """Make the interpreter refuse what it would compute wrongly (bfloat16 tl.dot)."""
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
        if tl.bfloat16 in (a.dtype.scalar, b.dtype.scalar):
            raise InterpreterUnsupported("bf16 tl.dot")
        return original(self, a, b, d, *args, **kwargs)

    create_dot.kopt_guard = True
    InterpreterBuilder.create_dot = create_dot


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
    fix = "give the CPU configs a float32 dtype, or run this version on a GPU"
    texts = [f"{type(x).__name__}: {x}" for x in _chain(e)]
    if any(isinstance(x, InterpreterUnsupported) for x in _chain(e)):
        return (
            f"{path}: tl.dot on bfloat16 cannot run on the Triton CPU interpreter (numpy has no bfloat16; it "
            f"would multiply raw bits and give wrong results): {fix}"
        )
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
