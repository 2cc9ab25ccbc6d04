"""A gpu-mode reference-kernels problem as a kernel-opt reference (trusted side: the user's own
problem), and its ``custom_kernel(data)`` submissions as versions.

gpu-mode (gpu-mode/reference-kernels, the KernelBot competitions) writes a problem as a folder:
``reference.py`` with ``generate_input(**spec, seed)`` (the call's data, a tuple that holds the
output buffer too), ``ref_kernel(data)`` (writes and returns the output) and
``check_implementation``; ``task.py`` (its types), ``task.yml`` (``tests`` and ``benchmarks``,
each a spec with its own seed) and a shared ``utils.py``. ``kopt init --gpumode`` copies them into
the workspace's ``problem/`` and writes a ``ref.py`` that hands kopt this module's ``Problem``:

- a config is a spec without its seed: ``setup(seed, **spec)`` calls ``generate_input`` with
  kopt's fresh seed; the data's elements are inputs ``data0``, ``data1``, ... by position (tensors,
  or plain values); a tensor inside a dict, list or tuple of them (trimul's and moe's weights) is
  an input of its own named by where it sat (``data2_norm_weight``), the element a value holding a
  ``Leaf`` there, and ``pack`` puts it back: each tensor gets fresh draws, a float64 copy for the
  reference and the mutation check. Tensors inside another object (a dataclass, a module) are
  refused in one line. A trailing element ``ref_kernel`` provably never reads and that is no
  output is zeroed in every draw (vectorsum's ``torch.empty(1)``);
- the outputs are what ``ref_kernel`` returns (a tensor, or a tuple/list of tensors), named in
  that order, once per config: an element of the data it returns itself (found by identity) is
  written in place, as the problem's own buffer; a new tensor lands in a trailing element of the
  data of its shape and dtype (or another float's width) only where ``ref_kernel`` provably never reads that element (its
  result is the same with it as drawn, filled with 0 and filled with NaN), else in a buffer of its own, ``out``
  (``out0``, ``out1``, ... by position where it returns several);
- ``reference(**inputs)`` is ``ref_kernel`` on the data packed again (a tuple, or the one element),
  its tuple mapped onto the outputs in order.

A version defining ``custom_kernel(data)`` (a submission, as it is) gets the same packed data and
returns the output, or a tuple of the outputs in ``ref_kernel``'s order, as gpu-mode's ``eval.py``
calls it; the kernel's process copies what it returns into the outputs' buffers, in that order.
Where there is no GPU (the interpreter's runs), the problem's ``device="cuda"``, ``.cuda()``,
``.to("cuda")`` and ``torch.Generator(device="cuda")``, in generate_input and in ref_kernel, make
tensors on torch's default device instead (``on_the_harness_device``).
"""

from __future__ import annotations

import ast
import contextlib
import copy
import dataclasses
import hashlib
import importlib.util
import itertools
import re
import sys
from dataclasses import dataclass
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
    """The problem's reference.py as a module, with its task.py and utils.py (loaded once per
    process: ``module_name``)."""
    path = folder / "reference.py"
    if not path.is_file():
        raise ProblemError(f"{folder}: no reference.py (a gpu-mode problem holds reference.py and task.yml)")
    mod = sys.modules.get(module_name(path)) or _executed(path)
    for fn in ("generate_input", "ref_kernel"):
        if not callable(getattr(mod, fn, None)):
            raise ProblemError(f"{path}: no {fn} (a gpu-mode reference.py defines generate_input and ref_kernel)")
    return mod


def _executed(path: Path):
    from kopt.formats import princeton

    name = module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod  # by that name the data's objects of its classes travel pickled (``Attrs``)
    try:
        with on_path(path.parent):
            spec.loader.exec_module(mod)
        if princeton.is_princeton_file(path):
            princeton.adapt(mod, path)
    except ProblemError:
        del sys.modules[name]
        raise
    except Exception as e:  # noqa: BLE001 - any error in the user's files is one line
        del sys.modules[name]
        raise ProblemError(f"{path}: does not run ({type(e).__name__}: {e})") from None
    return mod


def module_name(reference_py: Path) -> str:
    """The name reference.py is loaded under, the same in the judge's process and the kernel's
    (from its path and its bytes): an object of one of its classes in the data (a dataclass of
    weights) is pickled to the kernel's process by that name."""
    digest = hashlib.sha1(str(reference_py.resolve()).encode() + reference_py.read_bytes()).hexdigest()[:12]
    return f"gpumode_reference_{digest}"


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
    torch.Generator = _generator_on_the_default_device(real)
    try:
        with _CudaToDefault(), cuda_calls_moved():
            yield
    finally:
        torch.Generator = real


def _generator_on_the_default_device(real: type) -> type:
    """``torch.Generator`` making its "cuda" (or unnamed) generators on torch's default device: a
    class still, for the code that reads it meanwhile (``torch.Generator | None`` in a module torch
    imports lazily, ``isinstance``)."""

    class Generator(real):
        def __new__(cls, device=None):
            return real.__new__(cls, device=torch.get_default_device() if device is None or _cuda(device) else device)

        def __init__(self, device=None):
            pass

    return Generator


ELEMENT = re.compile(rf"{DATA}\d+")  # one element of the data (a tensor inside one: data2_weights_norm_weight)


@dataclass(frozen=True)
class Leaf:
    """Where a tensor sat inside a dict, list, tuple or object of the data: the input that holds it now."""

    name: str


@dataclass(frozen=True)
class Attrs:
    """An object of the data whose attributes held tensors (a dataclass of weights, mla-decode's
    ``Config``; a module holding a buffer, its ``KVCache``): ``template`` a copy of it with
    ``Leaf``s there. ``pack`` makes a fresh copy around each call's tensors, so what a call changes
    in the object (the cache's length) is as drawn again for the next call and for the reference."""

    template: object


CANNOT = object()  # ``unpacked``'s answer where a tensor sits where kopt cannot reach it


def pack(inputs: dict):
    """The data gpu-mode's functions take: ``data0``, ``data1``, ... as a tuple (or the one element),
    each dict, list, tuple or object among them holding its tensors again (``Leaf``s filled)."""
    items = [_filled(inputs[f"{DATA}{i}"], inputs) for i in range(sum(1 for k in inputs if ELEMENT.fullmatch(k)))]
    return items[0] if len(items) == 1 else tuple(items)


def _filled(v, inputs: dict):
    if isinstance(v, Leaf):
        return inputs[v.name]
    if isinstance(v, Attrs):
        o = copy.copy(v.template)
        vars(o).update({k: _filled(x, inputs) for k, x in vars(v.template).items()})
        return o
    if isinstance(v, dict):
        return type(v)((k, _filled(x, inputs)) for k, x in v.items())
    if isinstance(v, (list, tuple)) and any(isinstance(x, (Leaf, Attrs, dict, list, tuple)) for x in v):
        return type(v)(_filled(x, inputs) for x in v)
    return v


# an nn.Module's tables of tensors and submodules: their names stay out of the inputs' names
MODULE_TABLES = ("_parameters", "_buffers", "_modules")


def unpacked(element: str, v, inputs: dict, path: str = ""):
    """``v`` (data element ``element``) as a value without tensors: each tensor inside its dicts,
    lists, tuples, dataclasses and torch modules, however deep, made an input of its own (named by
    where it sat, into ``inputs``) and left as a ``Leaf``; so each gets fresh draws, a copy for the
    reference (float64 where it runs so) and the mutation check, as a tensor element does. CANNOT
    where a tensor sits in another object."""
    if isinstance(v, torch.Tensor):
        name = _free(inputs, f"{element}_{path.strip('_')}")
        inputs[name] = v
        return Leaf(name)
    if isinstance(v, dict):
        got = {k: unpacked(element, x, inputs, f"{path}_{_word(k)}") for k, x in v.items()}
        return CANNOT if any(x is CANNOT for x in got.values()) else type(v)(got)
    if type(v) in (list, tuple):  # not a namedtuple, whose fields another object's attributes are
        got = [unpacked(element, x, inputs, f"{path}_{i}") for i, x in enumerate(v)]
        return CANNOT if any(x is CANNOT for x in got) else type(v)(got)
    if _walkable(v):  # however deep its tensors sit (``_holds_tensors`` looks a few levels down)
        got = {
            k: unpacked(element, x, inputs, path if k in MODULE_TABLES else f"{path}_{_word(k)}")
            for k, x in vars(v).items()
        }
        if any(x is CANNOT for x in got.values()):
            return CANNOT
        if all(x is vars(v)[k] for k, x in got.items()):
            return v  # no tensor in it
        template = copy.copy(v)
        vars(template).update(got)
        return Attrs(template)
    return CANNOT if _holds_tensors(v) else v


def _walkable(v) -> bool:
    """A dataclass instance or a torch module with a ``__dict__``: objects whose attributes are
    their state, copied and filled again field by field (any other object, a slots dataclass
    among them, may keep tensors where kopt cannot see)."""
    dc = dataclasses.is_dataclass(v) and not isinstance(v, type)
    return (dc or isinstance(v, torch.nn.Module)) and hasattr(v, "__dict__")


def _word(k) -> str:
    return re.sub(r"\W+", "_", str(k)).strip("_") or "k"


def _free(inputs: dict, name: str) -> str:
    n, i = name, 1
    while n in inputs:
        n, i = f"{name}_{i}", i + 1
    return n


def _holds_tensors(v, depth: int = 0) -> bool:
    """Tensors inside a container or an object (a dict of weights, a model, a config holding them),
    looked for a few levels deep and among the first thousand items of each."""
    if isinstance(v, torch.Tensor):
        return True
    if depth > 3 or isinstance(v, (str, bytes, type)):
        return False
    if isinstance(v, dict):
        items = v.values()
    elif isinstance(v, (list, tuple, set, frozenset)):
        items = v
    elif hasattr(v, "__dict__"):
        items = vars(v).values()
    elif dataclasses.is_dataclass(v):  # a slots dataclass
        items = [getattr(v, f.name, None) for f in dataclasses.fields(v)]
    else:
        return False
    return any(_holds_tensors(x, depth + 1) for x in itertools.islice(items, 1000))


def _cloned(inputs: dict) -> dict:
    """The data with every tensor copied: ``ref_kernel`` may write what it is given."""
    return {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}


def _alike(v, t: torch.Tensor) -> bool:
    """A buffer ``t`` can land in: its shape, and its dtype or another float's (gpu-mode's checks
    compare values: pmpp_v2's prefixsum returns float64 for its float32 buffer)."""
    if not isinstance(v, torch.Tensor) or v.shape != t.shape:
        return False
    return v.dtype == t.dtype or (v.is_floating_point() and t.is_floating_point())


def _shapes(inputs: dict) -> tuple:
    """The data's tensors' names and shapes: one spec's, whatever their precision."""
    return tuple((k, tuple(v.shape)) for k, v in inputs.items() if k.startswith(DATA) and isinstance(v, torch.Tensor))


def _another_value(dtype: torch.dtype):
    """A fill unlike 0: NaN for floats, the largest value for integers, True for booleans."""
    if dtype == torch.bool:
        return True
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    return torch.iinfo(dtype).max


def _bitwise_equal(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape, dtype and bytes (NaN equal to itself)."""
    if a.shape != b.shape or a.dtype != b.dtype or a.device != b.device:
        return False
    return torch.equal(a.contiguous().reshape(-1).view(torch.uint8), b.contiguous().reshape(-1).view(torch.uint8))


class Problem:
    def __init__(self, folder: str | Path):
        self.folder = Path(folder)
        self._mod = None
        self._outputs: dict[tuple, list[str]] = {}
        self._unread_fill: dict[tuple, list[str]] = {}
        self._read: dict[str, bool] = {}
        self._drawn: list | None = None  # ref_kernel's result on a spec's first draw, while its elements are surveyed
        self._lands: dict[tuple, list[str]] = {}  # per spec's shapes: where each returned tensor lands
        self._tolerance: dict[str, dict | None] = {}  # per spec: check_implementation's, where computed at run time
        self._updates: dict[str, list[str]] = {}  # per spec: the buffers it returns and reads (kopt.measure.reference)

    @property
    def mod(self):
        if self._mod is None:
            self._mod = load_reference(self.folder)
        return self._mod

    def setup(self, seed: int, **spec) -> dict:
        with on_the_harness_device():
            # torch's own generator too: trimul draws its weights from it, not from its seeded one,
            # and its setup() was "not deterministic"
            torch.manual_seed(seed)
            data = self.mod.generate_input(**spec, seed=seed)
        items = list(data) if isinstance(data, (tuple, list)) else [data]
        inputs: dict = {}
        for i, v in enumerate(items):
            leaves: dict = {}  # its tensors, named data<i>_<where they sat>
            got = v if isinstance(v, torch.Tensor) else unpacked(f"{DATA}{i}", v, leaves)
            if got is CANNOT:
                raise ProblemError(
                    f"{self.folder / 'reference.py'}: generate_input's element {i} is a {type(v).__name__} holding "
                    "tensors (kernel-opt takes tensors, plain values, and dicts, lists, tuples, dataclasses and torch "
                    "modules of them: tensors inside another object get no fresh draw, float64 reference or mutation "
                    "check)"
                )
            inputs.update({f"{DATA}{i}": got, **leaves})
        key = repr(sorted(spec.items()))  # values may be lists
        if key not in self._outputs:
            self._read = {}  # _unread's answers for this spec: _output_names and _junk ask of the same elements
            self._outputs[key] = self._output_names(inputs)  # keeps ref_kernel's result on the draw (_drawn)
            self._unread_fill[key] = self._junk(inputs, self._outputs[key])
            # an element it returns itself and reads too (mla-decode's KV cache, appended to): an update
            self._updates[key] = [k for k in self._outputs[key] if k in inputs and not self._unread(inputs, k)]
            self._drawn = None  # not held past the spec's first draw
        for k in self._unread_fill[key]:
            inputs[k].zero_()
        if key not in self._tolerance:
            self._tolerance[key] = self._run_time_tolerance(inputs)
        # the unread trailing elements are scratch: a submission may write them (vectorsum sums into one)
        out = {"inputs": inputs, "outputs": self._outputs[key], "updates": self._updates[key]}
        out["scratch"] = self._unread_fill[key]
        return {**out, "tolerance": self._tolerance[key]} if self._tolerance[key] else out

    def _run_time_tolerance(self, inputs: dict) -> dict | None:
        """check_implementation's tolerance for the config's first data, where it computes it at
        run time (kopt.formats.gpumode_tolerance); None where reference.py names it."""
        from kopt.formats import gpumode_tolerance as tolerance  # it imports ProblemError from here

        reference_py = self.folder / "reference.py"
        callees = tolerance.run_time_callees(reference_py)
        if not callees:
            return None
        output = self._ref_kernel(_cloned(inputs))  # what the check is given: a check may read it
        with on_the_harness_device():
            data = pack(_cloned(inputs))
            return tolerance.run_time_tolerance(
                self.mod, data, output, callees, reference_py, tolerance.utils_defaults(reference_py)
            )

    def _junk(self, inputs: dict, outputs: list[str]) -> list[str]:
        """The data's trailing tensor elements that are no output and that ``ref_kernel`` provably
        never reads (vectorsum's ``torch.empty(1)`` beside the 0-d sum it returns): zeroed in every
        draw, so a draw of one seed is the same draw (uninitialized memory made setup() "not
        deterministic"), and scratch a submission may write (pmpp_v2's vectorsum atomically adds its
        sum into it): each call gets it zeroed again, and it is neither compared nor checked."""
        found = []
        for k in reversed([k for k in inputs if ELEMENT.fullmatch(k)][1:]):
            if k in outputs or not isinstance(inputs[k], torch.Tensor) or not self._unread(inputs, k):
                break
            found.append(k)
        return found

    def _output_names(self, inputs: dict) -> list[str]:
        """The outputs, in the order ``ref_kernel`` returns them: an element of the data it returns
        itself (written in place) is that element; a new tensor lands in a trailing buffer of the
        data of its shape and dtype (or another float's width) that ``ref_kernel`` provably leaves unread (``_trailing_buffers``),
        else in a buffer of its own, ``out`` (``out0``, ``out1``, ... where it returns several)."""
        copies = _cloned(inputs)
        returned = self._drawn = self._returned(self._ref_kernel(copies))
        names = [next((k for k, v in copies.items() if v is t), None) for t in returned]
        claimed = [k for k in names if k]
        if len(set(claimed)) < len(claimed):
            raise ProblemError(f"{self.folder / 'reference.py'}: ref_kernel returns one element of its data twice")
        buffers = self._trailing_buffers(inputs, returned, names)
        for i, t in enumerate(returned):
            if names[i] is None:
                free = [k for k in buffers if k not in names and _alike(inputs[k], t)]
                names[i] = free[0] if free else ("out" if len(returned) == 1 else f"out{i}")
        self._lands[_shapes(inputs)] = names
        return names

    def _returned(self, ret) -> list[torch.Tensor]:
        """``ref_kernel``'s result as its tensors in order: a tensor, or a tuple/list of tensors."""
        several = isinstance(ret, (tuple, list))
        items = list(ret) if several else [ret]
        bad = next((i for i, t in enumerate(items) if not isinstance(t, torch.Tensor)), None)
        if bad is not None or not items:
            what = (
                f"a {type(ret).__name__} whose element {bad} is of type {type(items[bad]).__name__}"
                if several and items
                else (f"an empty {type(ret).__name__}" if several else f"a value of type {type(ret).__name__}")
            )
            raise ProblemError(
                f"{self.folder / 'reference.py'}: ref_kernel returns {what}, not a tensor or a tuple of tensors "
                "(kernel-opt compares outputs that are tensors)"
            )
        return items

    def _trailing_buffers(self, inputs: dict, returned: list, names: list) -> list[str]:
        """The data's trailing output buffers, in data order: from its last element back (never the
        first), the elements ``ref_kernel`` returns itself or, of a new tensor's shape and dtype (or another float's width),
        provably leaves unread (``_unread``); up to the first that is neither."""
        new = [t for t, k in zip(returned, names, strict=True) if k is None]
        if not new:
            return []
        found = []
        for k in reversed([k for k in inputs if ELEMENT.fullmatch(k)][1:]):
            v = inputs[k]
            if k not in names and not (any(_alike(v, t) for t in new) and self._unread(inputs, k)):
                break
            found.insert(0, k)
        return found

    def _unread(self, inputs: dict, name: str) -> bool:
        if name not in self._read:
            self._read[name] = self._never_reads(inputs, name)
        return self._read[name]

    def _never_reads(self, inputs: dict, name: str) -> bool:
        """``ref_kernel``'s result is the same, bit for bit, with data element ``name`` as drawn,
        filled with 0 and filled with NaN (integers: their largest value; booleans: True): it never
        reads it. The draw is one of the three: a read through a comparison (``x * (r > 0.25)``)
        gives False for 0 and NaN alike, so the fills alone took a mask for an unread buffer, zeroed
        it in every draw and let a kernel returning zeros pass."""
        drawn = self._drawn if self._drawn is not None else self._returned(self._ref_kernel(_cloned(inputs)))
        for fill in (0, _another_value(inputs[name].dtype)):
            copies = _cloned(inputs)
            try:
                copies[name].fill_(fill)
                got = self._returned(self._ref_kernel(copies))
            except torch.cuda.OutOfMemoryError:
                raise  # out of memory says nothing of what it reads
            except Exception:  # noqa: BLE001 - a buffer it cannot run with is one it reads
                return False
            if len(got) != len(drawn) or not all(_bitwise_equal(a, b) for a, b in zip(drawn, got, strict=True)):
                return False  # it reads it: no need to run the other fill
        return True

    def reference(self, **inputs):
        """``ref_kernel`` on the inputs packed as gpu-mode's data; what it returns (a tensor, or a
        tuple of them in the outputs' order), each that lands in a buffer of the data of another
        float's width cast to it (the data's precision: float64 where the judge's reference runs)."""
        ret = self._ref_kernel({k: v for k, v in inputs.items() if k.startswith(DATA)})  # the elements and leaves
        names = self._lands.get(_shapes(inputs))
        if not names or not any(isinstance(inputs.get(n), torch.Tensor) for n in names):
            return ret
        items = list(ret) if isinstance(ret, (tuple, list)) else [ret]
        cast = [
            t.to(inputs[n].dtype) if isinstance(inputs.get(n), torch.Tensor) and inputs[n] is not t else t
            for t, n in zip(items, names, strict=True)
        ]
        return cast[0] if not isinstance(ret, (tuple, list)) else type(ret)(cast)

    def check(self, inputs: dict, outputs: dict) -> str | None:
        """``check_implementation`` on the call's data and the kernel's outputs (in ``ref_kernel``'s
        order), for a problem whose check judges properties of the output, never ``ref_kernel``'s
        result (``gpumode_tolerance.checks_properties``; ref.py binds it as its ``check_outputs``): None
        where it passes, else its message. gpu-mode's checks return ``(ok, message)``; an older
        one's message alone, empty where it passes."""
        data = pack({k: v for k, v in inputs.items() if k.startswith(DATA)})
        got = list(outputs.values())
        with on_the_harness_device():
            res = self.mod.check_implementation(data, got[0] if len(got) == 1 else tuple(got))
        ok, message = res if isinstance(res, tuple) else (not res if isinstance(res, str) else bool(res), res)
        return None if ok else f"check_implementation: {message or 'failed'}"

    def _ref_kernel(self, inputs: dict):
        """``ref_kernel`` on the packed data; the "cuda" tensors it makes itself (a model's weights,
        ``.cuda()``) made where generate_input's are (``on_the_harness_device``)."""
        with on_the_harness_device():
            return self.mod.ref_kernel(pack(inputs))


class CustomKernel:
    """A gpu-mode submission (a version file defining ``custom_kernel``) as a kernel: the call's
    inputs packed as the problem's data, its output returned."""

    def __init__(self, fn, module_globals: dict):
        self.fn = fn
        self.__globals__ = module_globals  # its Triton kernels, for the profile's metadata
        self.moved = not torch.cuda.is_available()  # its "cuda" tensors and modules made on the CPU

    def __call__(self, **inputs):
        if not self.moved:  # on a GPU the timed call is the submission's alone
            return self.fn(pack(inputs))
        with on_the_harness_device():
            return self.fn(pack(inputs))


def problem_folder(version: Path) -> Path | None:
    """The gpu-mode problem of a version's workspace (``problem/reference.py`` beside ``kernels/``)."""
    folder = version.resolve().parents[1] / "problem"
    return folder if (folder / "reference.py").is_file() and (folder / "task.yml").is_file() else None


def custom_kernel(module, path: Path) -> CustomKernel | None:
    """A version module's ``custom_kernel`` as a kernel, in a gpu-mode problem's workspace; else None."""
    folder = problem_folder(path)
    if folder is not None and _defines_classes(folder / "reference.py"):
        load_reference(folder)  # the data's objects of its classes (``Attrs``) unpickle here by its name
    fn = getattr(module, "custom_kernel", None)
    if not callable(fn) and folder is not None:
        from kopt.formats import princeton

        if princeton.is_princeton_file(folder / "reference.py"):
            fn = princeton.submission_kernel(module, folder)  # one function per phase
    return CustomKernel(fn, vars(module)) if callable(fn) and folder else None


def _defines_classes(reference_py: Path) -> bool:
    return any(isinstance(n, ast.ClassDef) for n in ast.parse(reference_py.read_text()).body)
