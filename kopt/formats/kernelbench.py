"""A KernelBench problem file as a kernel-opt reference (trusted side: the user's own problem).

KernelBench (ScalingIntelligence/KernelBench) writes a problem as a ``Model(nn.Module)``, sizes as
module-level numbers, ``get_inputs()`` and ``get_init_inputs()``. ``kopt init --kernelbench``
copies the file verbatim into the workspace as ``problem.py`` and writes a ``ref.py`` of two lines
that hand kopt this module's ``Problem``:

- a config is the file's sizes (``batch_size``, ``dim``, ...), set as the module's globals before
  ``get_inputs()`` and ``get_init_inputs()`` run, so one file gives the GPU config (its own sizes)
  and smaller CPU ones (``cpu_sizes``);
- ``setup(seed, **sizes)`` draws the inputs under the seed, builds the Model under the same seed
  and hands its parameters and buffers to kernels as inputs (``w_<name>``, dots as ``__``), so a
  kernel sees the weights the reference uses; the sizes go along as ``cfg_<name>`` scalars;
- ``reference(**inputs)`` is the Model's ``forward`` on those inputs and weights
  (``torch.func.functional_call`` on a Model built on the meta device), returning its outputs; the
  Model runs as KernelBench runs it (as built: training mode), on copies of its buffers, so a
  BatchNorm's running statistics, which it updates, are not the inputs.

The inputs are named after ``forward``'s parameters where they fit (else ``x0``, ``x1``, ...); the
outputs ``out``, or ``out0``, ``out1``, ... for a tuple.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import os
import re
from pathlib import Path

import torch

SIZE = "cfg_"  # a size of the problem, as a scalar input
FIXED = "inputs"  # the config column of a problem without sizes: its inputs' shapes, said, not set
WEIGHT = "w_"  # a parameter or buffer of the Model, by its dotted name with '.' as '__'
OUTPUT = re.compile(r"out\d*")  # the outputs' names
TOLERANCES = {  # KernelBench's own (src/kernelbench/eval.py, get_tolerance_for_precision), atol = rtol
    "default": {"atol": 1e-4, "rtol": 1e-4},  # a config has no dtype column: KernelBench's fp32
    "float32": {"atol": 1e-4, "rtol": 1e-4},
    "float16": {"atol": 1e-2, "rtol": 1e-2},
    "bfloat16": {"atol": 1e-2, "rtol": 1e-2},
}


class ProblemError(ValueError):
    """What kopt cannot map in a KernelBench file: one line naming the file and the construct."""


@contextlib.contextmanager
def on_the_harness_device():
    """A problem file's ``.cuda()`` (KernelBench's ``get_inputs`` call it) moves a tensor to torch's
    default device, which kernel-opt sets to the benchmark's: the GPU, the CPU of an interpreter run,
    or the meta device of ``kopt init``'s probes."""
    real = torch.Tensor.cuda
    torch.Tensor.cuda = lambda self, *a, **k: self.to(torch.get_default_device())
    try:
        yield
    finally:
        torch.Tensor.cuda = real


@contextlib.contextmanager
def said_cuda_on_the_interpreter():
    """In Triton's CPU interpreter, tensors say ``is_cuda`` (KernelBench's solutions assert it, and
    the interpreter runs their kernels on the CPU); elsewhere nothing changes."""
    if os.environ.get("TRITON_INTERPRET") != "1" or "is_cuda" in vars(torch.Tensor):  # or already said
        yield
        return
    torch.Tensor.is_cuda = property(lambda self: True)
    try:
        yield
    finally:
        del torch.Tensor.is_cuda  # torch's own, from its base class, again


def run_file(path: Path, sizes: dict | None = None) -> dict:
    """The file's module namespace, executed once, its module-level sizes first set to ``sizes``
    (each ``name = value`` at the top of the file gets the new value), so that what the file derives
    from them follows (``bias_shape = (out_features,)``)."""
    ns: dict = {"__name__": f"kernelbench_{path.stem}", "__file__": str(path)}
    try:
        tree = ast.parse(path.read_text(), str(path))
        for node in tree.body:
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
            if isinstance(target, ast.Name) and target.id in (sizes or {}):
                node.value = ast.copy_location(ast.Constant(sizes[target.id]), node.value)
            elif isinstance(target, ast.Name) and f"{target.id}_0" in (sizes or {}) and _written_integers(node.value):
                items = [ast.Constant(sizes.get(f"{target.id}_{i}", 0)) for i in range(len(node.value.elts))]
                same = type(node.value)(items, ast.Load())  # a list stays a list, a tuple a tuple
                node.value = ast.fix_missing_locations(ast.copy_location(same, node.value))
        exec(compile(tree, str(path), "exec"), ns)  # noqa: S102 - the user's own problem file
    except ModuleNotFoundError as e:  # a module the problem needs (level 3's Mamba2: einops)
        raise ProblemError(f"{path}: imports {e.name}, not installed here (pip install {e.name})") from None
    except Exception as e:  # noqa: BLE001 - any error in the user's file is one line
        raise ProblemError(f"{path}: does not run ({type(e).__name__}: {e})") from None
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not callable(ns.get(name)):
            raise ProblemError(
                f"{path}: no {name} (a KernelBench problem defines Model, get_inputs and get_init_inputs)"
            )
    return ns


def sizes_of(ns: dict) -> dict[str, int | float]:
    """The module-level numbers, in the order the file defines them: the problem's sizes. A list
    or tuple written as integers (level 3's MLP, ``layer_sizes = [16384, 16384]``; level 1's
    HingeLoss, ``input_shape = (32768,)``, as wide as its batch) gives a size per element,
    ``layer_sizes_0``, ``layer_sizes_1``, ..., so it is halved as the others are (``run_file``
    writes it back from them); one made of other sizes (``bias_shape = (out_features,)``) follows
    them and is none."""
    out: dict = {}
    written = _integer_sequences(ns.get("__file__"))
    for k, v in ns.items():
        if k.startswith("_") or isinstance(v, bool):
            continue
        if isinstance(v, (int, float)):
            out[k] = v
        elif k in written and isinstance(v, (list, tuple)) and 0 < len(v) <= 16 and all(_integer(x) for x in v):
            out.update({f"{k}_{i}": x for i, x in enumerate(v)})
    return out


def _integer_sequences(path: str | None) -> set[str]:
    """The names whose last assignment at a file's top level is a list or tuple of integers written
    out (one assigned again from other sizes follows them)."""
    try:
        tree = ast.parse(Path(path).read_text(), str(path)) if path else None
    except (OSError, SyntaxError, ValueError):
        return set()
    last: dict[str, bool] = {}
    for node in tree.body if tree else []:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(target, ast.Name):
            last[target.id] = _written_integers(node.value)
    return {name for name, written in last.items() if written}


def _written_integers(node: ast.AST) -> bool:
    return isinstance(node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and _integer(e.value) for e in node.elts
    )


def _integer(x) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


class Problem:
    """One problem file, its namespace per config (its sizes as globals), its Model per config."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self._ns: dict[tuple, dict] = {}
        self._skeletons: dict[tuple, torch.nn.Module] = {}
        self._outputs: dict[tuple, list[str]] = {}

    def namespace(self, sizes: dict) -> dict:
        key = tuple(sorted(sizes.items()))
        if key not in self._ns:
            ns = run_file(self.path, sizes)
            unknown = set(sizes) - set(sizes_of(ns))
            if unknown:
                raise ProblemError(f"{self.path}: no module-level size named {sorted(unknown)}")
            ns.update(sizes)  # get_inputs() and get_init_inputs() read them when called
            self._ns[key] = ns
        return self._ns[key]

    def arg_names(self, ns: dict, n: int) -> list[str]:
        """``forward``'s parameter names when there are ``n`` of them, plain and distinct; else x0, x1, ..."""
        params = list(inspect.signature(ns["Model"].forward).parameters.values())[1:]
        names = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        ok = len(names) == n == len(params) and not any(x.startswith((SIZE, WEIGHT, "out")) for x in names)
        return names if ok else [f"x{i}" for i in range(n)]

    def skeleton(self, sizes: dict, device: torch.device | str | None = None) -> torch.nn.Module:
        """The Model's structure (its weights come as inputs), built on the meta device; on
        ``device`` (the inputs', else the CPU) where that fails (an ``__init__`` that reads a value:
        SwinMLP's ``.item()``) or leaves a plain tensor attribute, which forward would read on meta."""
        key = (tuple(sorted(sizes.items())), "meta")
        if key not in self._skeletons:
            self._skeletons[key] = self._built(sizes, "meta", strict=False)
        meta = self._skeletons[key]
        if meta is not None and not _plain_tensors(meta):
            return meta
        key = (key[0], str(device or "cpu"))
        if key not in self._skeletons:
            self._skeletons[key] = self._built(sizes, device or "cpu", strict=True)
        return self._skeletons[key]

    def _built(self, sizes: dict, device, strict: bool) -> torch.nn.Module | None:
        ns = self.namespace(sizes)
        try:
            with torch.device(device), on_the_harness_device():
                return ns["Model"](*ns["get_init_inputs"]())
        except Exception as e:  # noqa: BLE001 - the user's Model: on meta, tried again on a device
            if not strict:
                return None
            raise ProblemError(f"{self.path}: its Model cannot be built ({type(e).__name__}: {e})") from None

    def output_names(self, sizes: dict, run) -> list[str]:
        """``out``, or ``out0``, ``out1``, ... as many as ``run()`` (the forward) returns."""
        key = tuple(sorted(sizes.items()))
        if key not in self._outputs:
            got = run()
            n = len(got) if isinstance(got, (tuple, list)) else 1
            self._outputs[key] = ["out"] if n == 1 else [f"out{i}" for i in range(n)]
        return self._outputs[key]

    def setup(self, seed: int, **sizes) -> dict:
        inputs = self.inputs(seed, **sizes)
        sizes.pop(FIXED, None)
        outputs = self.output_names(sizes, lambda: self.reference(**inputs))
        return {"inputs": inputs, "outputs": outputs}

    def inputs(self, seed: int, **sizes) -> dict:
        """setup()'s inputs (the arguments, the Model's weights and the sizes), without running the
        forward that names the outputs."""
        sizes.pop(FIXED, None)
        ns = self.namespace(sizes)
        with on_the_harness_device():
            torch.manual_seed(seed)
            args = list(ns["get_inputs"]())
            torch.manual_seed(seed)
            model = ns["Model"](*ns["get_init_inputs"]())
        names = self.arg_names(ns, len(args))
        inputs = dict(zip(names, args, strict=True))
        for name, t in (*model.named_parameters(), *model.named_buffers()):
            inputs[WEIGHT + name.replace(".", "__")] = t.detach()
        inputs.update({SIZE + k: v for k, v in sizes.items()})
        return inputs

    def reference(self, **inputs):
        """The Model's forward on ``inputs`` (its weights and sizes among them), returning its outputs."""
        return self.forward(self.skeleton, inputs)

    def forward(self, model_for, inputs: dict):
        """``model_for(sizes, device)``'s forward on ``inputs``: their weights (buffers copied: a
        training-mode BatchNorm updates its running statistics; parameters as tensors of their own
        over the same memory, so a module that points its weights elsewhere, as nn.LSTM and nn.GRU
        do on a GPU to flatten them for cuDNN, leaves the caller's tensors on the arena) and the
        arguments by name; output buffers passed by name (a kernel's call: ``out``, ``out0``, ...)
        are left out."""
        sizes = {k[len(SIZE) :]: v for k, v in inputs.items() if k.startswith(SIZE)}
        weights = {k[len(WEIGHT) :].replace("__", "."): v.detach() for k, v in inputs.items() if k.startswith(WEIGHT)}
        given = [k for k in inputs if not k.startswith((SIZE, WEIGHT)) and not OUTPUT.fullmatch(k)]
        names = self.arg_names(self.namespace(sizes), len(given))
        device = next((t.device for t in inputs.values() if isinstance(t, torch.Tensor)), torch.device("cpu"))
        model = model_for(sizes, device)
        for name, _ in model.named_buffers():
            if name in weights:
                weights[name] = weights[name].clone()
        with torch.no_grad():
            return torch.func.functional_call(model, weights, tuple(inputs[n] for n in names))


def _plain_tensors(model: torch.nn.Module) -> bool:
    """Whether a module holds a tensor that is neither a parameter nor a buffer (it stays where the
    Model was built: on meta, forward could not read it)."""
    return any(
        isinstance(v, torch.Tensor) for m in model.modules() for k, v in vars(m).items() if not k.startswith("_")
    )


class ModelNewKernel:
    """A KernelBench solution (a version file defining ``ModelNew``) as a kernel: built as
    KernelBench's harness builds it, ``ModelNew(*get_init_inputs())`` at the call's sizes, on the
    inputs' device, once per config; each call runs its ``forward`` on the call's inputs with the
    reference Model's weights of that draw (``torch.func.functional_call``: its parameters and
    buffers named as the Model's), and returns its outputs. A ``ModelNew`` whose parameters are not
    the Model's, by name and shape, is one line."""

    def __init__(self, cls, problem: Problem, module_globals: dict, where: Path):
        self.cls, self.problem, self.where = cls, problem, where
        self.__globals__ = module_globals  # its Triton kernels, for the profile's metadata
        self._models: dict[tuple, torch.nn.Module] = {}

    def model(self, sizes: dict, device: torch.device) -> torch.nn.Module:
        key = (tuple(sorted(sizes.items())), str(device))
        if key not in self._models:
            ns = self.problem.namespace(sizes)
            with torch.device(device), on_the_harness_device():
                m = self.cls(*ns["get_init_inputs"]())
            theirs = {n: tuple(t.shape) for n, t in (*self.problem.skeleton(sizes).named_parameters(),)}
            mine = {n: tuple(t.shape) for n, t in m.named_parameters()}
            if mine != theirs:
                raise ProblemError(
                    f"{self.where}: ModelNew's parameters {sorted(mine)} are not the Model's {sorted(theirs)} "
                    "(same names and shapes: it is given the Model's weights)"
                )
            self._models[key] = m
        return self._models[key]

    def __call__(self, **inputs):
        with said_cuda_on_the_interpreter():
            return self.problem.forward(self.model, inputs)


def model_new_kernel(module, path: Path) -> ModelNewKernel | None:
    """A version module's ``ModelNew`` as a kernel, when it defines one and the workspace is a
    KernelBench problem's (``problem.py`` beside ``kernels/``); else None."""
    cls = getattr(module, "ModelNew", None)
    problem = path.resolve().parents[1] / "problem.py"
    if not isinstance(cls, type) or not problem.is_file():
        return None
    return ModelNewKernel(cls, Problem(problem), vars(module), path)
