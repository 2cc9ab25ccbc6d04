"""The reference protocol (the judge's): draws of inputs, the outputs' layout, where the float64
reference runs, and the expected outputs of one draw.

``ref.py`` defines ``setup(..., seed, ...) -> {"inputs": {...}, "outputs": [names]}``, called
as ``setup(seed=seed, **config)`` (so ``setup(seed, M, N)``, ``setup(M, N, seed=0)`` and
``setup(n=1024, seed=42, **kw)`` all work), and ``reference(**inputs)``, which either writes the
outputs in place (they are then tensors in ``inputs``, allocated by ``setup`` with
``torch.empty`` or anything else: their contents are never read) or returns them: a tensor, a
tuple/list (in the order of ``outputs``), or a dict by output name. When it returns them, the
harness allocates the kernel's output buffers from the shapes and dtypes the reference returned
(``Layout``), so ``run_kernel(**inputs, **outputs)`` still writes in place while torch baselines
are timed as users call them.

Outputs are write-only: the determinism check compares the inputs only (an output buffer's shape
and dtype must still repeat), and rule ``reference`` refuses a reference whose result depends on
what its output buffers held before the call (the kernels find them poisoned; ``writes_only``),
unless setup() names them ``updates`` (drawn, read, then written: a KV cache). The reference runs
in float64 where it can (``place``: else float32 where float64 does not fit, or the inputs' own
dtypes where it cannot run in float64), unless ref.py's ``check_outputs`` judges the outputs itself.

The expected outputs are computed only *after* the kernel's call, in the judge's process, from
the judge's private copy of that call's inputs, and zeroed as soon as they are compared
(``scrub``); the kernel's process never holds them (kopt.measure.trial).
"""

from __future__ import annotations

import contextlib
import inspect
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from kopt.formats import host_available_bytes
from kopt.measure.arena import pool_cached_bytes
from kopt.measure.device import bytes_equal, poison
from kopt.measure.faults import KernelFault

FLOAT64, FLOAT32, NATIVE, NONE = "float64", "float32", "native", "none"


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def dtype_name(dt: torch.dtype) -> str:
    return str(dt).removeprefix("torch.")


def _is_float(t: torch.Tensor) -> bool:
    return t.is_floating_point() or t.is_complex()


@dataclass
class Draw:
    """One call of ``setup``: its inputs (tensors on the device, and scalars) and output names."""

    seed: int
    inputs: dict[str, Any]
    outputs: list[str]
    tolerance: dict | None = None  # setup()'s own for this config's data (else target.yaml's)
    updates: list[str] = field(default_factory=list)  # outputs whose drawn content the call reads (``draw``)
    scratch: list[str] = field(default_factory=list)  # inputs the kernel may write (``draw``)

    def tensors(self) -> dict[str, torch.Tensor]:
        return {k: v for k, v in self.inputs.items() if isinstance(v, torch.Tensor)}

    def placed(self, name: str) -> bool:
        """Its drawn content reaches the kernel (an input, or an update), not only its buffer."""
        return name not in self.outputs or name in self.updates

    def input_tensors(self) -> dict[str, torch.Tensor]:
        """The tensors that are inputs proper: not the output buffers ``setup`` allocated."""
        return {k: v for k, v in self.tensors().items() if k not in self.outputs}


def setup_takes_seed(setup) -> str | None:
    """Why ``setup`` cannot be called as ``setup(seed=..., **config)``; None when it can."""
    try:
        params = inspect.signature(setup).parameters.values()
    except (TypeError, ValueError):
        return None  # a builtin or C function: its call will say
    if any(p.name == "seed" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params):
        return None
    if any(p.kind == p.VAR_KEYWORD for p in params) and not any(p.name == "seed" for p in params):
        return None  # setup(**kwargs) reads kwargs["seed"]; check_seed_used tells one that ignores it
    return (
        "setup() takes no 'seed' parameter by keyword: kopt calls setup(seed=<a fresh seed>, **config) for "
        "every draw of inputs; add one (def setup(seed, M, N) or def setup(M, N, seed=0)) and seed torch's "
        "generator with it"
    )


def draw(ref, cfg: dict, seed: int, device: str) -> Draw:
    try:
        with torch.device(device):  # tensors are created where they are used
            data = ref.setup(seed=seed, **cfg)
    except Exception as e:
        raise KernelFault(f"ref.py: setup(seed={seed}, **{cfg}) failed: {type(e).__name__}: {e}") from e
    if not isinstance(data, dict) or not isinstance(data.get("inputs"), dict):
        raise KernelFault("ref.py: setup() must return {'inputs': {name: value}, 'outputs': [names]}")
    outputs = data.get("outputs") or []
    if not isinstance(outputs, (list, tuple)) or not all(isinstance(o, str) for o in outputs):
        raise KernelFault(f"ref.py: setup()'s 'outputs' must be a list of names, not {outputs!r}")
    inputs = {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in data["inputs"].items()}
    tol = _tolerance(data.get("tolerance"))
    outputs = list(outputs)
    updates = _buffers(data, "updates", inputs, [n for n in inputs if n in outputs])
    return Draw(
        seed, inputs, outputs, tol, updates, _buffers(data, "scratch", inputs, [n for n in inputs if n not in outputs])
    )


def _buffers(data: dict, key: str, inputs: dict, among: list[str]) -> list[str]:
    """setup()'s optional lists of tensors it hands the kernel to write. ``updates``: output
    buffers among its inputs whose drawn content the reference reads before it writes them (a cache
    a decode step appends to, and returns): each call gets them as drawn, never poisoned, and they
    are compared after it as outputs. ``scratch``: inputs the reference never reads that the kernel
    may write (gpu-mode's vectorsum sums into one): each call gets them as drawn, and they are
    neither compared nor checked unchanged."""
    got = data.get(key) or []
    if not isinstance(got, (list, tuple)) or any(n not in among or not torch.is_tensor(inputs.get(n)) for n in got):
        raise KernelFault(f"ref.py: setup()'s {key!r} must name tensors among {among}, not {got!r}")
    return list(got)


def _tolerance(tol) -> dict | None:
    """setup()'s own tolerance for this config's data (optional: a gpu-mode check's computed at run
    time), as ``{"atol": a, "rtol": r}``, two finite numbers >= 0."""
    if tol is None:
        return None
    ok = isinstance(tol, dict) and set(tol) == {"atol", "rtol"}
    ok = ok and all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in tol.values())
    if not ok or min(tol.values()) < 0:
        raise KernelFault(
            f"ref.py: setup()'s 'tolerance' must be {{'atol': a, 'rtol': r}}, two numbers >= 0, not {tol!r}"
        )
    return {k: float(v) for k, v in tol.items()}


def returned_tensors(ret) -> Any:
    """``ret`` as outputs when it is a tensor, a tuple/list of tensors or a dict of tensors; else None."""
    if isinstance(ret, torch.Tensor):
        return (ret,)
    if isinstance(ret, (tuple, list)) and ret and all(isinstance(t, torch.Tensor) for t in ret):
        return tuple(ret)
    if isinstance(ret, dict) and ret and all(isinstance(t, torch.Tensor) for t in ret.values()):
        return dict(ret)
    return None


def outputs_of(ret, names: list[str], args: dict, who: str) -> dict[str, torch.Tensor]:
    """The outputs of a call of the reference or a kernel: what it returned (mapped to ``names``),
    or, when it returned no tensors, the output buffers it was given."""
    got = returned_tensors(ret)
    if got is None:
        missing = [n for n in names if not isinstance(args.get(n), torch.Tensor)]
        if not names or missing:
            raise KernelFault(
                f"{who} returned no tensors and the outputs {missing or '(none listed)'} are not tensors in "
                "setup()'s inputs: write them in place or return them"
            )
        return {n: args[n] for n in names}
    if isinstance(got, dict):
        if names and sorted(got) != sorted(names):
            raise KernelFault(f"{who} returned outputs {sorted(got)}, but setup() lists {sorted(names)}")
        return got
    if not names:
        names = ["out"] if len(got) == 1 else [f"out{i}" for i in range(len(got))]
    if len(got) != len(names):
        raise KernelFault(f"{who} returned {len(got)} tensors, but setup() lists {len(names)} outputs {names}")
    return dict(zip(names, got, strict=True))


@dataclass(frozen=True)
class OutputSpec:
    name: str
    shape: tuple[int, ...]
    dtype: str  # torch dtype name, as the reference produces it at the inputs' own precision
    in_inputs: bool  # setup() allocates the buffer; else the harness does
    updates: bool = False  # its drawn content is read before it is written (``Draw.updates``): never poisoned


@dataclass
class Layout:
    outputs: list[OutputSpec]
    returns: bool  # the reference returns its outputs (else it writes them in place)
    inputs: list[str] = field(default_factory=list)  # tensor inputs the kernel must leave unchanged
    tolerance: dict | None = None  # setup()'s own for the config (Draw.tolerance), else target.yaml's

    @property
    def names(self) -> list[str]:
        return [o.name for o in self.outputs]

    def spec(self, name: str) -> OutputSpec:
        return next(o for o in self.outputs if o.name == name)

    @property
    def updates(self) -> list[str]:
        return [o.name for o in self.outputs if o.updates]


def probe(ref, cfg: dict, device: str, seed: int, check_writes: bool = False, step=None) -> tuple[Layout, Draw]:
    """Learn the outputs' shapes and dtypes from one reference run at the inputs' own precision,
    and check that ``setup`` is deterministic (the harness regenerates inputs from their seed).
    ``check_writes`` (rule ``reference``, once per config): the reference only writes its output
    buffers (``writes_only``). ``step(label)``: marks each step in the job's progress."""
    step = step or (lambda what: None)
    step("setup(), twice (deterministic)")
    d, again = draw(ref, cfg, seed, device), draw(ref, cfg, seed, device)
    same_draws(d, again)
    del again
    in_place = {n: t for n, t in d.tensors().items() if n in d.outputs and n not in d.updates}
    for t in in_place.values():
        poison(t)
    args = with_fresh_updates(d)
    step("reference()")
    ret = run_reference(ref, args)
    returns = returned_tensors(ret) is not None
    outs = outputs_of(ret, d.outputs, args, "ref.py: reference()")
    if check_writes and in_place:
        step("reference() writes only its outputs")
        writes_only(ref, d, in_place, outs)
    specs = [OutputSpec(n, tuple(t.shape), dtype_name(t.dtype), n in d.inputs, n in d.updates) for n, t in outs.items()]
    layout = Layout(specs, returns, [k for k in d.tensors() if k not in outs and k not in d.scratch], d.tolerance)
    scrub(outs)
    return layout, d


def with_fresh_updates(d: Draw) -> dict:
    """The draw's inputs for one reference run, its ``updates`` copied: the run writes them, and
    the draw stays as drawn for the next (a second run on an updated cache is another call)."""
    return {**d.inputs, **{n: d.inputs[n].clone() for n in d.updates}}


def same_draws(d: Draw, again: Draw) -> None:
    """Two draws of one seed: equal inputs, and output buffers of one shape and dtype."""
    for k, t in d.tensors().items():
        u = again.inputs.get(k)
        if not isinstance(u, torch.Tensor) or u.shape != t.shape or u.dtype != t.dtype:
            what = "output buffer" if k in d.outputs else "input"
            raise KernelFault(
                f"ref.py: setup() is not deterministic: {what} '{k}' has another shape or dtype in a second call "
                f"with seed {d.seed}"
            )
        if d.placed(k) and not bytes_equal(u, t):
            raise KernelFault(
                f"ref.py: setup() is not deterministic: input '{k}' differs between two calls with seed {d.seed} "
                "(seed torch's generator with the given seed)"
            )


def own_check(ref, inputs: dict, outputs: dict[str, torch.Tensor]) -> str | None:
    """ref.py's own check of a call's outputs, where it defines ``check_outputs(inputs, outputs)`` (a problem
    whose outputs are unique only up to signs or order, judged by their properties: gpu-mode's
    linalg); it replaces the element-wise comparison with the reference. None where they pass, else
    why not. It gets copies of the judge's draw (its own precision) and of the outputs, so nothing
    it does reaches a later check; an error it raises on these outputs is their failure."""
    args = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in inputs.items()}
    try:
        with torch.no_grad():
            why = ref.check_outputs(args, {k: t.clone() for k, t in outputs.items()})
    except Exception as e:  # noqa: BLE001 - the outputs it could not judge are not shown correct
        if ran_out_of_memory(e):
            raise  # the judge's memory, not the kernel's outputs
        return f"ref.py: check_outputs() raised {type(e).__name__} on these outputs: {str(e)[:300]}"
    return None if why is None else str(why)[:500]


def checking_plan(ref, d: Draw, layout: Layout, device: str) -> Placement:
    """Where ref.py's own check judges the outputs: the reference's outputs for the probe's draw,
    at the inputs' own dtypes, must pass it and the same outputs poisoned with NaN must not (a
    check that passes unwritten outputs proves nothing); the memory the check takes is measured,
    so each pool is sized around it."""
    plan = Placement(device, NONE, why="ref.py's check_outputs() judges the outputs")
    outs = expected(ref, d.inputs, layout, Placement(device, NATIVE))
    with _peak(plan):
        why = own_check(ref, d.inputs, outs)
    if why is not None:
        raise KernelFault(f"ref.py: check_outputs() fails the reference's own outputs: {why}")
    for t in outs.values():
        poison(t)
    if own_check(ref, d.inputs, outs) is None:
        raise KernelFault(
            "ref.py: check_outputs() passes outputs poisoned with NaN: it must fail outputs left unwritten"
        )
    scrub(outs)
    return plan


def run_reference(ref, args: dict) -> Any:
    try:
        with torch.no_grad():
            return ref.reference(**args)
    except Exception as e:
        raise KernelFault(f"ref.py: reference() failed: {type(e).__name__}: {e}") from e


def _fill_large(t: torch.Tensor) -> None:
    """A value unlike the poison: the dtype's largest finite float, 0 for integers, False."""
    if _is_float(t):
        big = torch.finfo(t.real.dtype if t.is_complex() else t.dtype).max
        t.fill_(complex(big, big) if t.is_complex() else big)
    else:
        t.zero_()


def _same_result(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal integers; floats NaN at the same places and otherwise close (a reference with atomics
    on the GPU may differ in the last bits between runs, not more)."""
    if not _is_float(a):
        return torch.equal(a, b)
    wide = torch.complex128 if a.is_complex() else torch.float64
    a, b = a.to(wide), b.to(wide)
    return torch.equal(a.isnan(), b.isnan()) and bool(torch.isclose(a, b, rtol=1e-3, atol=1e-3, equal_nan=True).all())


def writes_only(ref, d: Draw, buffers: dict[str, torch.Tensor], first: dict[str, torch.Tensor]) -> None:
    """The reference gave ``first`` with its output ``buffers`` poisoned; run it again with them
    filled with another value. Other results mean it reads what the buffers held (``out += ...``,
    ``torch.fmax(out, x)``), or leaves part of them unwritten: the kernels find them poisoned, and
    the expected outputs would be whatever the buffers held. Compared on the host (no second copy
    of the outputs on the device)."""
    first = {n: t.to("cpu", copy=True) for n, t in first.items()}
    for t in buffers.values():
        _fill_large(t)
    args = with_fresh_updates(d)
    second = outputs_of(run_reference(ref, args), d.outputs, args, "ref.py: reference()")
    for n, a in first.items():
        if not _same_result(a, second[n].to("cpu")):
            raise KernelFault(
                f"ref.py: reference() reads its output '{n}' before writing it, or leaves part of it unwritten "
                "(its result depends on what the buffer held): outputs are write-only and the kernels find them "
                "poisoned; write every element, and pass a value it reads as an input of its own"
            )
    scrub(first)
    scrub(second)


def check_seed_used(ref, cfg: dict, device: str, seed: int, others: int = 7) -> None:
    """Fresh inputs need a ``setup`` whose inputs follow its seed: ``others`` more seeds must not
    all give the same input tensors (when there are any), or every call would see the same values.
    Several, so that small inputs of few values do not match by chance (two 1-element
    ``randint(0, 2)`` match one other seed's one time in four, seven others one in 16384); the
    first that differs ends the check."""
    a = draw(ref, cfg, seed, device)
    names = list(a.input_tensors())
    if not names:
        return
    for i in range(1, others + 1):
        b = draw(ref, cfg, seed ^ i, device).inputs
        if any(not isinstance(b.get(k), torch.Tensor) or not bytes_equal(a.inputs[k], b[k]) for k in names):
            return
    raise KernelFault(
        f"ref.py: setup() ignores its seed: seed {seed} and {others} others give the same inputs {names}; the "
        "harness draws fresh inputs for every call (torch.manual_seed(seed) in setup)"
    )


# --- where the reference runs ----------------------------------------------------------------

# A float32 reference (when a float64 one does not fit) adds eight float32 ulps to every rtol.
FLOAT32_REFERENCE_RTOL = 2.0**-20


@dataclass
class Placement:
    device: str  # where the reference runs
    precision: str  # float64; float32 when float64 does not fit (tolerances widened); native when float64
    # cannot run (``_native``); none: ref.py's check_outputs judges
    peak_bytes: int | None = None  # memory the reference took on the device (measured)
    why: str = ""

    @property
    def widened(self) -> bool:
        return self.precision != FLOAT64

    def record(self) -> dict:
        rec = asdict(self)
        rec["widened_rtol_by"] = FLOAT32_REFERENCE_RTOL if self.widened else 0.0
        return rec


def _bytes_at(d: Draw, layout: Layout, precision: str) -> int:
    """Memory the converted inputs and the outputs take at ``precision`` (floats only change)."""
    item = {FLOAT64: 8, FLOAT32: 4}.get(precision)  # None: the inputs' own dtypes (NATIVE)
    total = 0
    for t in d.tensors().values():
        total += t.numel() * (item if item and _is_float(t) else t.element_size())
    for o in layout.outputs:
        n, dt = 1, getattr(torch, o.dtype)
        for s in o.shape:
            n *= s
        total += n * (item if item and dt.is_floating_point else dt.itemsize)
    return total


def available_bytes(device: str) -> int:
    """Free memory where the reference would run: the GPU's (with torch's cached blocks, but not the
    arenas' pool's, which only an arena may take: ``arena.pool_cached_bytes``), or the host's."""
    if device == "cuda":
        free, _ = torch.cuda.mem_get_info()
        cached = torch.cuda.memory_reserved() - torch.cuda.memory_allocated() - pool_cached_bytes()
        return int(free + max(cached, 0))
    return host_available_bytes()


def ran_out_of_memory(e: BaseException) -> bool:
    """Whether ``e`` (or the error of the reference's that a KernelFault wraps) is running out of memory."""
    e = e.__cause__ if isinstance(e, KernelFault) and e.__cause__ else e
    oom = getattr(torch, "OutOfMemoryError", torch.cuda.OutOfMemoryError)
    return isinstance(e, oom) or "out of memory" in str(e).lower() or "can't allocate" in str(e)


def place(ref, d: Draw, layout: Layout, device: str, limit_bytes: int = 0) -> Placement:
    """Float64 on the device when it fits; else float64 on the host; else float32 (tolerances
    widened by FLOAT32_REFERENCE_RTOL); one that cannot run in either (not for want of memory) at
    its inputs' own dtypes (``_native``), as is one that ran out of the GPU's memory in both where
    its inputs' own dtypes take less. ``limit_bytes`` (0: free memory) caps what it may take.
    The host cannot catch running out of memory (the kernel's OOM killer ends the judge), so float64
    goes there only with three times its inputs and outputs, and, after float64 ran out of the
    GPU's memory, with HOST_AFTER_GPU times the GPU's whole memory: its working memory is beyond
    its inputs and outputs (gpu-mode's mla-decode on an H200: its float64 run on the host grew to
    123 GB of the host's 125 and the judge was killed, in every run)."""
    plans = [(device, FLOAT64)] + ([("cpu", FLOAT64)] if device != "cpu" else []) + [(device, FLOAT32)]
    tried, gpu_ran_out = [], False
    for dev, prec in plans:
        need = _bytes_at(d, layout, prec) * (3 if dev == "cpu" else 1)
        need = max(need, HOST_AFTER_GPU * gpu_total_bytes()) if dev == "cpu" and gpu_ran_out else need
        have = min(limit_bytes, available_bytes(dev)) if limit_bytes else available_bytes(dev)
        if need > have:
            tried.append(f"{prec} on {dev} needs about {human_bytes(need)}, {human_bytes(have)} available")
            continue
        plan = Placement(dev, prec, why="; ".join(tried) or "fits")
        try:
            with _peak(plan):
                scrub(expected(ref, d.inputs, layout, plan))
            return plan
        except Exception as e:  # noqa: BLE001 - only running out of memory moves to the next plan
            if not ran_out_of_memory(e):
                tried.append(f"{prec} on {dev} failed ({type(e).__name__}: {' '.join(str(e).split())[:160]})")
                return _native(ref, d, layout, device, e, "; ".join(tried))
            tried.append(f"{prec} on {dev} ran out of memory ({human_bytes(have)} available)")
            if dev == "cuda":
                gpu_ran_out = True
                torch.cuda.empty_cache()
    nowhere = KernelFault(f"ref.py: reference() does not fit anywhere: {'; '.join(tried)}")
    # as gpu-mode's eval runs it, in the inputs' own dtypes, where those take less than float32 (bfloat16)
    if gpu_ran_out and device == "cuda" and _bytes_at(d, layout, NATIVE) < _bytes_at(d, layout, FLOAT32):
        return _native(ref, d, layout, device, nowhere, "; ".join(tried))
    raise nowhere


HOST_AFTER_GPU = 2  # float64 on the host after it ran out of the GPU's memory: twice the GPU's whole memory


def gpu_total_bytes() -> int:
    """The GPU's whole memory (not what is free: another process may hold the rest for now)."""
    return int(torch.cuda.mem_get_info()[1])


def _native(ref, d: Draw, layout: Layout, device: str, failed: Exception, tried: str) -> Placement:
    """A reference that cannot run in float64 or float32 (mla-decode's casts its attention to
    bfloat16 inside, then multiplies it with wider values) runs at its inputs' own precision, as the
    problem's own check compares (gpu-mode's eval: against ref_kernel on the same dtypes), the
    reason recorded (``tried``: the plans tried, the last the one that failed); one that fails
    there too fails with the error that sent it there."""
    why = f"{tried}, so the inputs' own dtypes"
    plan = Placement(device, NATIVE, why=why)
    try:
        with _peak(plan):
            scrub(expected(ref, d.inputs, layout, plan))
    except Exception:  # noqa: BLE001 - the error that sent it here is the one to show
        raise failed from None
    return plan


@contextlib.contextmanager
def _peak(plan: Placement):
    """The GPU memory the reference takes beside what is allocated (``plan.peak_bytes``): each
    pool is sized around it."""
    if plan.device != "cuda":
        yield
        return
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    yield
    plan.peak_bytes = int(torch.cuda.max_memory_allocated() - base)


def expected(ref, inputs: dict, layout: Layout, plan: Placement) -> dict[str, torch.Tensor]:
    """The reference's outputs for ``inputs`` (not modified), computed as ``plan`` says."""
    dt = {FLOAT64: torch.float64, FLOAT32: torch.float32}.get(plan.precision)  # None: the inputs' own
    args = {}
    for k, v in inputs.items():
        if not isinstance(v, torch.Tensor):
            args[k] = v
        elif k in layout.names and k not in layout.updates:  # an output buffer: never read (probe), so not copied
            floating = v.is_floating_point() and dt is not None
            args[k] = torch.empty(v.shape, dtype=dt if floating else v.dtype, device=plan.device)
        elif v.is_floating_point() and dt is not None:
            args[k] = v.detach().to(plan.device, dt, copy=True)  # a copy even at its own dtype: the draw stays
        else:
            args[k] = v.detach().to(plan.device).clone()
    ret = run_reference(ref, args)
    outs = outputs_of(ret, layout.names, args, "ref.py: reference()")
    del args
    return outs


def scrub(tensors: dict[str, torch.Tensor]) -> None:
    """Zero expected outputs before they are freed, so no later allocation can read them."""
    for t in tensors.values():
        t.zero_()
    tensors.clear()
