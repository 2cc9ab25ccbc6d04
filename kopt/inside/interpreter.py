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
* ``torch.compile`` around a Triton launch (gpu-mode's vectorsum submission): Dynamo captures a
  ``@triton.jit`` kernel into its graph only as a ``JITFunction``; the interpreter's
  ``InterpretedFunction`` is plain Python to it, so it traced the interpreter's own numpy code and
  failed ("Dynamo failed to run FX node with fake tensors ... KeyError(torch.uint64)"), with or
  without kopt. ``install`` keeps the launch out of Dynamo: the compiled function breaks its graph
  there, the interpreter runs the kernel as it runs an uncompiled one, and the torch code around it
  stays compiled. The first such launch gets one line (``NOTES``, and the log).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys

_KERNEL = {"path": "the kernel"}
# lines on how the interpreter ran the kernel differently from a GPU, each once; the kernel's
# process sends the new ones with its answers (kopt.inside.serve), the judge records them
NOTES: list[str] = []
OUTSIDE_THE_GRAPH = "kopt: a Triton launch on the CPU interpreter runs outside torch.compile's graph"


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
    _launches_outside_dynamo()
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


def _launches_outside_dynamo() -> None:
    """A Triton launch on the interpreter runs outside torch.compile's tracing (a graph break), as
    the interpreter runs it uncompiled: Dynamo cannot trace the interpreter (see the module's
    docstring), and on a GPU the same launch runs the same kernel inside the compiled graph. Made
    once Dynamo is imported (by torch.compile, torch._dynamo.optimize or anything else): marking
    the launch needs Dynamo, whose import cost 2.0 s of CPU in every kernel process on the CI
    machine, most of which never compile."""
    if "torch._dynamo" in sys.modules:
        _launch_outside_graphs()
    elif not any(isinstance(f, _WhenDynamoImported) for f in sys.meta_path):
        sys.meta_path.insert(0, _WhenDynamoImported())


class _WhenDynamoImported(importlib.abc.MetaPathFinder):
    """Finds torch._dynamo as the import system would, and marks the launches once it has run."""

    def find_spec(self, name, path, target=None):
        if name != "torch._dynamo":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _launch_outside_graphs()

        spec.loader.exec_module = exec_module
        return spec


def _launch_outside_graphs() -> None:
    import torch
    from triton.runtime.interpreter import InterpretedFunction

    if getattr(InterpretedFunction.run, "kopt_guard", False):
        return
    eager_run = torch.compiler.disable(InterpretedFunction.run, reason=OUTSIDE_THE_GRAPH)
    said_eager = torch.compiler.disable(_said_eager, reason=OUTSIDE_THE_GRAPH)

    def run(self, *args, **kwargs):
        if torch.compiler.is_compiling():  # constant while Dynamo traces: the compiled code calls it
            said_eager(self.__name__)
        return eager_run(self, *args, **kwargs)

    run.kopt_guard = True
    InterpretedFunction.run = run


def _said_eager(kernel_name: str) -> None:
    """The line, once, for a launch that a torch.compile'd function made on the interpreter."""
    line = (
        f"{_KERNEL['path']}: torch.compile on the Triton CPU interpreter: the launches of {kernel_name} run "
        "eagerly between the compiled graphs (a graph break: Dynamo cannot trace the interpreter; on a GPU "
        "torch.compile puts them in its graph), the torch code around them compiled"
    )
    if line not in NOTES:
        NOTES.append(line)
        print(f"kopt: {line}", file=sys.stderr, flush=True)


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
    if any(OUTSIDE_THE_GRAPH in t for t in texts):
        return (
            f"{path}: torch.compile(fullgraph=True) cannot hold a Triton launch on the CPU interpreter (Dynamo "
            "cannot trace the interpreter, so the launch must break the graph): compile without fullgraph=True "
            "when os.environ.get('TRITON_INTERPRET') == '1', or run this version on a GPU"
        )
    if any("only 0-dimensional arrays can be converted" in t for t in texts):
        return (
            f"{path}: the Triton interpreter failed on numpy >= 2.4 (triton-lang/triton#9171): install "
            "'numpy<2.4' (tools/install.sh does)"
        )
    return None
