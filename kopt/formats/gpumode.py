"""A gpu-mode reference-kernels problem as a kernel-opt reference (trusted side: the user's own
problem), and its ``custom_kernel(data)`` submissions as versions.

gpu-mode (gpu-mode/reference-kernels, the KernelBot competitions) writes a problem as a folder:
``reference.py`` with ``generate_input(**spec, seed)`` (the call's data, a tuple that holds the
output buffer too), ``ref_kernel(data)`` (writes and returns the output) and
``check_implementation``; ``task.py`` (its types), ``task.yml`` (``tests`` and ``benchmarks``,
each a spec with its own seed) and a shared ``utils.py``. ``kopt init --gpumode`` copies them into
the workspace's ``problem/`` and writes a ``ref.py`` that hands kopt this module's ``Problem``:

- a config is a spec without its seed: ``setup(seed, **spec)`` calls ``generate_input`` with
  kopt's fresh seed; the data's elements are inputs ``data0``, ``data1``, ... by position;
- the output is the element ``ref_kernel`` returns (found once per config, by identity), written in
  place as the problem's own buffer; a new tensor it returns is ``out``;
- ``reference(**inputs)`` is ``ref_kernel`` on the data packed again (a tuple, or the one element).

A version defining ``custom_kernel(data)`` (a submission, as it is) gets the same packed data and
returns the output, as gpu-mode's ``eval.py`` calls it. Where there is no GPU (the interpreter's
runs), the problem's ``device="cuda"``, ``.cuda()``, ``.to("cuda")`` and
``torch.Generator(device="cuda")`` make tensors on torch's default device instead
(``on_the_harness_device``).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import sys
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

DATA = "data"  # data0, data1, ...: generate_input's elements, by position
SHARED = ("task", "utils")  # the module names a problem's files import each other by


class ProblemError(ValueError):
    """What kopt cannot map in a gpu-mode problem: one line naming the file and the construct."""


@contextlib.contextmanager
def on_path(folder: Path):
    """``folder`` first on sys.path, and its ``task``/``utils`` fresh (another problem's may be loaded)."""
    saved = {k: sys.modules.pop(k) for k in SHARED if k in sys.modules}
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path.remove(str(folder))
        for k in SHARED:
            sys.modules.pop(k, None)
        sys.modules.update(saved)


def load_reference(folder: Path):
    """The problem's reference.py as a module, with its task.py and utils.py."""
    path = folder / "reference.py"
    if not path.is_file():
        raise ProblemError(f"{folder}: no reference.py (a gpu-mode problem holds reference.py and task.yml)")
    spec = importlib.util.spec_from_file_location(f"gpumode_reference_{abs(hash(str(path))) % 10**8}", path)
    mod = importlib.util.module_from_spec(spec)
    try:
        with on_path(folder):
            spec.loader.exec_module(mod)
    except Exception as e:  # noqa: BLE001 - any error in the user's files is one line
        raise ProblemError(f"{path}: does not run ({type(e).__name__}: {e})") from None
    for name in ("generate_input", "ref_kernel"):
        if not callable(getattr(mod, name, None)):
            raise ProblemError(f"{path}: no {name} (a gpu-mode reference.py defines generate_input and ref_kernel)")
    return mod


def _cuda(x) -> bool:
    return (isinstance(x, str) and x.startswith("cuda")) or (isinstance(x, torch.device) and x.type == "cuda")


class _CudaToDefault(TorchFunctionMode):
    """``device="cuda"`` (factories) and ``.to("cuda")`` made on torch's default device."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if _cuda(kwargs.get("device")):
            kwargs["device"] = torch.get_default_device()
        if func is torch.Tensor.to:
            args = tuple(torch.get_default_device() if _cuda(a) else a for a in args)
        return func(*args, **kwargs)


@contextlib.contextmanager
def on_the_harness_device():
    """Without a GPU, the problem's tensors and generators made on "cuda" are made on torch's
    default device (kernel-opt sets it to the benchmark's); with one, nothing changes."""
    if torch.cuda.is_available():
        yield
        return
    from kopt.formats.kernelbench import on_the_harness_device as cuda_calls_moved

    real = torch.Generator
    torch.Generator = lambda device=None: real(device=torch.get_default_device())  # noqa: ARG005
    try:
        with _CudaToDefault(), cuda_calls_moved():
            yield
    finally:
        torch.Generator = real


def pack(inputs: dict):
    """The data gpu-mode's functions take: ``data0``, ``data1``, ... as a tuple (or the one element)."""
    items = [inputs[f"{DATA}{i}"] for i in range(sum(1 for k in inputs if k.startswith(DATA)))]
    return items[0] if len(items) == 1 else tuple(items)


class Problem:
    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._mod = None
        self._outputs: dict[tuple, list[str]] = {}

    @property
    def mod(self):
        if self._mod is None:
            self._mod = load_reference(self.folder)
        return self._mod

    def setup(self, seed: int, **spec) -> dict:
        with on_the_harness_device():
            data = self.mod.generate_input(**spec, seed=seed)
        items = list(data) if isinstance(data, (tuple, list)) else [data]
        inputs = {f"{DATA}{i}": v for i, v in enumerate(items)}
        key = repr(sorted(spec.items()))  # values may be lists
        if key not in self._outputs:
            self._outputs[key] = self._output_names(inputs)
        return {"inputs": inputs, "outputs": self._outputs[key]}

    def _output_names(self, inputs: dict) -> list[str]:
        """The element ``ref_kernel`` writes and returns (by identity); where it returns a new
        tensor, the last element of that shape and dtype (the problem's output buffer, made with
        torch.empty and left unread: the kernels' output lands there); else ``out``."""
        copies = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
        ret = self.mod.ref_kernel(pack(copies))
        mine = [k for k, v in copies.items() if v is ret]
        if mine:
            return mine
        if not isinstance(ret, torch.Tensor):
            raise ProblemError(
                f"{self.folder / 'reference.py'}: ref_kernel returns {type(ret).__name__}, not a tensor "
                "(one output: kernel-opt takes gpu-mode problems with one output tensor)"
            )
        alike = [
            k for k, v in copies.items()
            if isinstance(v, torch.Tensor) and v.shape == ret.shape and v.dtype == ret.dtype and k != f"{DATA}0"
        ]  # fmt: skip
        return alike[-1:] or ["out"]

    def reference(self, **inputs):
        """``ref_kernel`` on the inputs packed as gpu-mode's data; the output it returns."""
        return self.mod.ref_kernel(pack({k: v for k, v in inputs.items() if k.startswith(DATA)}))


# gpu-mode compares with ref_kernel's output at the output's dtype, kernel-opt with a float64
# reference: a half-precision output is one rounding off it. Its tolerance is at least this.
HALF_ULP = {"float16": {"rtol": 1e-3, "atol": 1e-5}, "bfloat16": {"rtol": 8e-3, "atol": 1e-5}}


def tolerances(reference_py: Path, utils_py: Path) -> tuple[dict, str]:
    """target.yaml's tolerances: ``check_implementation``'s (``default``), and for half-precision
    outputs at least one rounding of theirs (HALF_ULP); how it was found."""
    tol, how = tolerance(reference_py, utils_py)
    out = {"default": tol}
    for dtype, least in HALF_ULP.items():
        out[dtype] = {k: max(tol[k], least[k]) for k in ("atol", "rtol")}
    return out, how + "; float16 and bfloat16 outputs at least one rounding (a float64 reference)"


def tolerance(reference_py: Path, utils_py: Path) -> tuple[dict, str]:
    """``check_implementation``'s tolerance: ``make_match_reference(ref_kernel, rtol=, atol=)``'s
    (its defaults read from utils.py's ``match_reference``), else exact; and how it was found."""
    call = next(
        (
            n
            for n in ast.walk(ast.parse(reference_py.read_text()))
            if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "make_match_reference"
        ),
        None,
    )
    where = "make_match_reference's"
    if call is None:  # a check of its own: the tolerance its calls name, else their defaults
        call = _own_check_call(reference_py)
        if call is None:
            return {"atol": 0.0, "rtol": 0.0}, "check_implementation compares for equality: exact"
        where = f"check_implementation's {getattr(call.func, 'id', getattr(call.func, 'attr', 'call'))}"
    tol = _defaults(utils_py)
    try:
        tol.update({k.arg: float(ast.literal_eval(k.value)) for k in call.keywords if k.arg in ("atol", "rtol")})
    except (ValueError, TypeError):
        raise ProblemError(f"{reference_py}: {where} tolerance is not a number kopt can read") from None
    return tol, f"{where}: rtol {tol['rtol']:g}, atol {tol['atol']:g}"


def _own_check_call(reference_py: Path):
    """In a ``check_implementation`` of the problem's own, its comparison call (naming rtol/atol,
    or a match_reference/allclose without them); None when it compares for equality."""
    tree = ast.parse(reference_py.read_text())
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "check_implementation"), None)
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)] if fn else []
    named = [c for c in calls if any(k.arg in ("atol", "rtol") for k in c.keywords)]
    close = [c for c in calls if "close" in ast.unparse(c.func) or "match_reference" in ast.unparse(c.func)]
    return (named or close or [None])[0]


def _defaults(utils_py: Path) -> dict:
    for n in ast.walk(ast.parse(utils_py.read_text())) if utils_py.is_file() else []:
        if isinstance(n, ast.FunctionDef) and n.name == "match_reference":
            args = n.args.args[-len(n.args.defaults) :] if n.args.defaults else []
            got = {a.arg: float(ast.literal_eval(d)) for a, d in zip(args, n.args.defaults, strict=True)}
            return {"rtol": got.get("rtol", 1e-5), "atol": got.get("atol", 1e-8)}
    return {"rtol": 1e-5, "atol": 1e-8}


class CustomKernel:
    """A gpu-mode submission (a version file defining ``custom_kernel``) as a kernel: the call's
    inputs packed as the problem's data, its output returned."""

    def __init__(self, fn, module_globals: dict):
        self.fn = fn
        self.__globals__ = module_globals  # its Triton kernels, for the profile's metadata

    def __call__(self, **inputs):
        return self.fn(pack(inputs))


def problem_folder(version: Path) -> Path | None:
    """The gpu-mode problem of a version's workspace (``problem/reference.py`` beside ``kernels/``)."""
    folder = version.resolve().parents[1] / "problem"
    return folder if (folder / "reference.py").is_file() and (folder / "task.yml").is_file() else None


def custom_kernel(module, path: Path) -> CustomKernel | None:
    """A version module's ``custom_kernel`` as a kernel, in a gpu-mode problem's workspace; else None."""
    fn = getattr(module, "custom_kernel", None)
    return CustomKernel(fn, vars(module)) if callable(fn) and problem_folder(path) else None
