"""A problem in the shape of gpu-mode's ``princeton/`` folder, as a gpu-mode problem (trusted side:
the user's own problem; its submissions' functions are bound inside the kernel's process).

There a problem is several functions, one per phase: reference.py defines
``generate_inputs(batch_size, <spec>, seed)``, returning a tuple of named tensors, and
``reference_<phase>(...)`` for each phase (cross_entropy: ``reference_forward(logits, targets)``,
``reference_backward(logits, targets, grad_output)``), each taking some of those tensors by name,
and the tolerance as module constants ``ATOL`` and ``RTOL``; a submission defines a
``<name>_<phase>`` function for every phase; its own ``eval.py`` fixes the batch (``B = 4_096``).

kernel-opt judges one call of every phase, in the reference's order, as one kernel: the adapter
gives the module gpu-mode's ``generate_input`` (the spec, with ``batch_size``), ``ref_kernel`` (the
phases' results as a tuple) and ``check_implementation`` (their comparison at ATOL and RTOL), so
the rest of kopt.formats.gpumode maps it as any gpu-mode problem; a submission's phases become
its ``custom_kernel``.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from kopt.formats.gpumode import ProblemError

PHASE = "reference_"  # reference.py's phase functions: reference_forward, reference_backward
BATCH = "batch_size"  # generate_inputs' batch argument, fixed by eval.py's B
CPU_BATCH = 8  # the CPU configs' batch: a B=4096 x V=128256 bf16 logits is 525M elements


def is_princeton(tree: ast.Module) -> bool:
    """reference.py in this shape: ``generate_inputs`` and phase functions, no ``generate_input``."""
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    return "generate_inputs" in names and "generate_input" not in names and any(n.startswith(PHASE) for n in names)


def is_princeton_file(reference_py: Path) -> bool:
    return is_princeton(ast.parse(reference_py.read_text()))


def phases(reference_py: Path) -> list[str]:
    """The phase names, in reference.py's order (``reference_forward`` -> ``forward``)."""
    tree = ast.parse(reference_py.read_text())
    return [n.name[len(PHASE) :] for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith(PHASE)]


def input_names(reference_py: Path) -> list[str]:
    """The names of the tensors ``generate_inputs`` returns, from its ``return a, b, c``."""
    fn = next(
        n
        for n in ast.parse(reference_py.read_text()).body
        if isinstance(n, ast.FunctionDef) and n.name == "generate_inputs"
    )
    rets = [n.value for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]
    if len(rets) != 1 or not isinstance(rets[0], ast.Tuple) or not all(isinstance(e, ast.Name) for e in rets[0].elts):
        raise ProblemError(f"{reference_py}: generate_inputs does not end in one `return a, b, ...` of named tensors")
    return [e.id for e in rets[0].elts]


def adapt(mod, reference_py: Path) -> None:
    """Give the loaded reference module gpu-mode's three functions (see the module's docstring)."""
    names, steps = input_names(reference_py), phases(reference_py)

    def generate_input(**spec):
        return mod.generate_inputs(**spec)

    generate_input.__signature__ = inspect.signature(mod.generate_inputs)  # the spec's check reads it

    def ref_kernel(data):
        return call_phases({p: getattr(mod, PHASE + p) for p in steps}, names, data)

    def check_implementation(data, output):
        import torch

        want = ref_kernel(data)
        close = [torch.allclose(a, b, atol=mod.ATOL, rtol=mod.RTOL) for a, b in zip(output, want, strict=True)]
        bad = [p for p, ok in zip(steps, close, strict=True) if not ok]
        return (not bad, f"phases {bad} differ" if bad else "")

    mod.generate_input, mod.ref_kernel, mod.check_implementation = generate_input, ref_kernel, check_implementation


def call_phases(fns: dict, names: list[str], data) -> tuple:
    """Each phase's function on the tensors its reference function names (by position, as the
    problem's eval.py calls them), in order; their results as a tuple."""
    values = dict(zip(names, data, strict=True))
    return tuple(fn(*[values[a] for a in _arguments(fn, names)]) for fn in fns.values())


def _arguments(fn, names: list[str]) -> list[str]:
    """The inputs a phase function takes: its leading parameters, named as generate_inputs' tensors
    are (a submission may name them otherwise: then by position)."""
    params = [p for p in inspect.signature(fn).parameters.values() if p.default is p.empty]
    taken = [p.name for p in params if p.name in names]
    return taken if len(taken) == len(params) else names[: len(params)]


def tolerance(tree: ast.Module, reference_py: Path) -> tuple[dict, str]:
    """reference.py's ``ATOL`` and ``RTOL`` constants."""
    consts = {
        t.id: n.value
        for n in tree.body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name) and t.id in ("ATOL", "RTOL")
    }
    try:
        tol = {"atol": float(ast.literal_eval(consts["ATOL"])), "rtol": float(ast.literal_eval(consts["RTOL"]))}
    except (KeyError, ValueError, TypeError) as e:
        raise ProblemError(f"{reference_py}: no ATOL and RTOL numbers (the phases' tolerance): {e}") from None
    return tol, f"reference.py's ATOL {tol['atol']:g}, RTOL {tol['rtol']:g} (every phase)"


def eval_batch(folder: Path) -> int:
    """eval.py's ``B``: the batch every spec runs at."""
    eval_py = folder / "eval.py"
    try:
        tree = ast.parse(eval_py.read_text())
        return int(next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign) and _names(n, "B")))
    except (OSError, SyntaxError, StopIteration, ValueError, TypeError):
        raise ProblemError(f"{eval_py}: no `B = <number>` (the batch its specs run at)") from None


def _names(n: ast.Assign, name: str) -> bool:
    return any(isinstance(t, ast.Name) and t.id == name for t in n.targets)


def with_batch(specs: list[dict], batch: int) -> list[dict]:
    return [{BATCH: batch, **s} for s in specs]


def submission_kernel(module, folder: Path):
    """A submission's phases as one ``custom_kernel(data)`` (in the kernel's process: the phases
    and the inputs' names read from reference.py's source); None where it lacks a phase."""
    reference_py = folder / "reference.py"
    fns, names = submission_phases(module, phases(reference_py)), input_names(reference_py)
    return None if fns is None else (lambda data: call_phases(fns, names, data))


def submission_phases(module, steps: list[str]) -> dict | None:
    """A submission's function for every phase (``cross_entropy_forward`` for ``forward``), in the
    reference's order; None where one is missing."""
    fns = {}
    for p in steps:
        found = [v for k, v in vars(module).items() if k.endswith("_" + p) and callable(v) and not k.startswith("_")]
        if len(found) != 1:
            return None
        fns[p] = found[0]
    return fns
