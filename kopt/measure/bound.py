"""The bound on work Nsight Compute does not see (trusted side, in the timing process).

Nsight Compute, the clock that decides, times kernels only: copies, memsets, host work and another
process's or context's kernels are not in it. A kernel can tell the processes it wraps (its
injection is in their environment and memory) and move work out of its sight there alone. The
bound is what such work cannot shrink: the judge's own clock around batches of the same calls,
made in the timing process, where Nsight Compute is not, so whatever a version does anywhere, a
batch holds the whole of its work:

1. untimed: each of K input sets of the pool drawn afresh in the judge's private memory
   (``Pool.draw``), its outputs poisoned; the arena still holds the last inputs, so nothing of this
   batch is in the kernel's reach yet;
2. the clock starts (t0); the judge places every set's inputs in the arena and flushes the L2 from
   its own context; on a GPU it then records an interprocess event ("placed", ``GpuOrder``);
3. one order: every set called back to back (``kopt.inside.serve.Session.batch``). On a GPU the
   kernel's process makes its stream wait for "placed", queues the calls, records its own
   interprocess event ("done") and answers at once; the judge's read waits for "done" on the GPU.
   So the GPU runs the placing, the calls and the read back to back, and neither side's host
   hand-over is under the clock (they were about a millisecond a batch and most of its spread);
4. the judge reads SAMPLES random elements of every output and input in its own context, in one
   gather (positions drawn for this batch, which the kernel's process never sees): the clock
   stops (t1) when that read ends;
5. untimed: every call checked at the sampled elements (its inputs bit for bit its draw's, its
   outputs against the reference of its draw there), and the sampled elements read again: one
   that changed after t1 fails the version.

So t1 - t0 holds every call's whole work: no input exists in the arena before t0, and an output
still being written after t1 is caught at a sampled element (work left undone on a share f of
each output escapes with probability (1 - f) ** 4096: under 2% from f = 0.1%). A "done" recorded
before the calls end only starts the read early, where the same checks catch it. The clock is the
judge's own CUDA events at the placing's start and the read's end (the GPU's time, none of the
judge's host delays). It holds the judge's own placing and flush too, and the switches between
the two processes' contexts (about 9 µs a call of 32 on the H100), the same for every version of a
config (kopt.loop.decide compares versions, never one alone). Nothing kopt's code in the kernel's
process does is under the clock but queueing the calls, so a kernel that strips or patches it
saves nothing there (``tests/fixtures/attacks/_lean.py``, tests/gpu/test_gpu_bound.py). On the
CPU the judge and the process synchronize and hand over on the host, as before.

Per config: ``bound_us``, the median of (t1 - t0) / K over the faster half of the batches (a
batch is only ever slowed by what disturbs it: ``lower_half``); ``bound_se_us``, its standard error
(``bound_se``: a bootstrap over every batch, robust to a late one); more batches until that is within
``bound_target_pct`` % of the call's time or ``bound_batches_max`` are made.
"""

from __future__ import annotations

import contextlib
import importlib
import math
import secrets
import threading
import time
from dataclasses import dataclass

import numpy as np
import torch

from kopt.measure import reference, wire
from kopt.measure.device import paused_gc, sync
from kopt.measure.faults import KernelFault
from kopt.measure.reference import available_bytes
from kopt.measure.trial import Trial

_perf_counter = time.perf_counter


def batch_size(trial: Trial) -> int:
    """K: every set of the pool, as far as K private draws fit beside it. On a GPU, a third of the
    memory the pool leaves on the device (its total, not what is free now), so every version of a
    config batches alike: versions whose batches differ in size are never compared, as a batch's
    fixed costs are shared out over its calls (on the H100 the softmax's 512 MiB configs took 20,
    23 or 32 sets by the memory free at the time, and honest gains were left unresolved,
    docs/runs/h100-bound/session11/). Fewer where less is free, as before."""
    one = sum(t.numel() * t.element_size() for t in trial.pool.sets[0].tensors.values())
    k = min(len(trial.pool.sets), int(available_bytes(trial.device) * 0.8) // max(one, 1))
    if trial.device == "cuda":
        pool = trial.pool.arena.base.numel() * trial.pool.arena.base.element_size()
        k = min(k, (torch.cuda.mem_get_info()[1] - pool) // 3 // max(one, 1))
    return max(1, k)


SAMPLES = 4096  # elements of each output read at the clock's stop (the proof that the work was done)


@dataclass
class Sampled:
    """One tensor's sampled elements: set ``j`` of the batch, output (or input) ``name``, its
    row-major element indices ``flat``, and where their bytes lie in the gather (``lo``:``hi``)."""

    j: int
    name: str
    flat: torch.Tensor
    lo: int
    hi: int
    dtype: torch.dtype
    is_input: bool = False  # an input the kernel must leave unchanged

    def values(self, seen: torch.Tensor) -> torch.Tensor:
        return _typed(seen[self.lo : self.hi], self.dtype)


def _typed(raw: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Bytes ``raw`` (a slice at any offset) as elements of ``dtype``: copied first, so aligned."""
    return raw.clone().view(dtype)


def sample_points(trial: Trial, sets) -> tuple[torch.Tensor, list[Sampled]]:
    """Where the outputs and inputs of ``sets`` are read when the clock stops: SAMPLES random
    elements of each (every element of a smaller one), as byte positions in the arena, so the read is one
    gather, one kernel (a gather per output cost about 1 ms of the judge's own launches inside
    every batch's clock on the H100, and most of its spread); and which tensor each part is.
    Drawn from a generator of the judge's own seeded from the OS for this batch: not torch's global
    one, which ref.py's setup() seeds with the draw's seed, whose inputs the kernel sees (an
    adversarial review predicted them so). The sets' tensors of one name and layout are drawn
    together (each set its own positions): a batch's 32 sets cost a few launches, not 32 times as many."""
    base = trial.pool.arena.base
    dev = base.device
    gen = torch.Generator(device=dev)
    gen.manual_seed(secrets.randbits(63))
    points, parts, at = [], [], 0
    for name, is_input, group in _alike(trial, sets):
        t = group[0][1]
        n, size = t.numel(), t.element_size()
        flat = (  # every element of a small one (none of an empty one: still checked, for its shape)
            torch.arange(n, device=dev).expand(len(group), n).contiguous()
            if n <= SAMPLES
            else torch.randint(0, n, (len(group), SAMPLES), generator=gen, device=dev)
        )
        starts = torch.tensor([u.data_ptr() - base.data_ptr() for _, u in group], device=dev)
        first = starts[:, None] + _element_offsets(t, flat) * size
        points.append((first[..., None] + torch.arange(size, device=dev)).reshape(-1))
        for i, (j, u) in enumerate(group):
            parts.append(Sampled(j, name, flat[i], at, at + flat.shape[1] * size, u.dtype, is_input))
            at += flat.shape[1] * size
    return (torch.cat(points) if points else torch.zeros(0, dtype=torch.int64, device=dev)), parts


def _alike(trial: Trial, sets) -> list[tuple[str, bool, list[tuple[int, torch.Tensor]]]]:
    """Each set's outputs and inputs not among them (``is_input``), grouped by name and layout (shape,
    strides, dtype): ``(name, is_input, [(set j, its tensor), ...])``; a pool's sets share one
    layout, so one group a name."""
    groups: dict[tuple, tuple[str, bool, list]] = {}
    for j, s in enumerate(sets):
        outs = s.outputs(trial.layout)
        for name, t in {**outs, **{k: s.tensors[k] for k in trial.layout.inputs if k not in outs}}.items():
            key = (name, tuple(t.shape), t.stride(), t.dtype)
            groups.setdefault(key, (name, name not in outs, []))[2].append((j, t))
    return list(groups.values())


def _element_offsets(t: torch.Tensor, flat: torch.Tensor) -> torch.Tensor:
    """The storage offsets (elements, from ``t``'s first) of ``t``'s elements at row-major ``flat``."""
    off = torch.zeros_like(flat)
    rest = flat.clone()
    for n, stride in reversed(list(zip(t.shape, t.stride(), strict=True))):
        off += (rest % n) * stride
        rest //= n
    return off


def output_samples(trial: Trial, points: torch.Tensor) -> torch.Tensor:
    """The arena's bytes at ``points``, gathered in the judge's own context (queued, not waited for)."""
    return trial.pool.arena.base[points]


def one_batch(trial: Trial, k: int, key: str, i: int) -> dict:
    """One batch of ``k`` sets (steps 1-5 of the module's docstring): its time per call (µs), the
    kernel process's own host time per call, the judge's own parts on a GPU (µs, its own events),
    the seeds and sets. On the CPU the same protocol runs (its checks are tested there), unpolled."""
    cuda = trial.device == "cuda"
    # the persisting-L2 carve-out reset in the kernel's process (kopt.inside.l2; cudaDeviceSetLimit is
    # slow and would sit inside the batch), the order after this one polled for; before the draws and
    # the poison, so nothing the process does on this order can prepare the batch's outputs (review)
    order = GpuOrder.of(trial) if cuda else None
    prep = trial.proc.ask({"op": "prep", "spin_next": cuda, "placed": order.placed_handle if order else None})
    if order:
        order.open_done(prep, f"config {key}, bound batch {i}")
    trial.pool.new_cycle()
    sets = [trial.pool.next() for _ in range(k)]
    draws = [trial.pool.draw(s) for s in sets]
    for s in sets:
        trial.pool.poison(s)
    points, parts = sample_points(trial, sets)
    ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)] if cuda else None
    where = f"config {key}, bound batch {i}"
    sync(trial.device)
    with paused_gc():
        us, answer, seen = _timed_batch(trial, sets, draws, points, ev, where, order)
    _check(trial, sets, draws, answer, seen, where, points, parts)
    try:
        host_us = wire.number(answer, "host_us")
    except ValueError as e:
        raise KernelFault(f"{where}: {e}") from None
    out = {"us": round(us, 3), "host_us": round(host_us, 3), "seeds": [s.seed for s in sets]}
    out["sets"] = [s.index for s in sets]
    if ev:
        out["judge_in_us"] = round(ev[0].elapsed_time(ev[1]) * 1e3 / k, 3)
        out["calls_us"] = round(ev[1].elapsed_time(ev[2]) * 1e3 / k, 3)
        out["judge_out_us"] = round(ev[2].elapsed_time(ev[3]) * 1e3 / k, 3)
    return out


class GpuOrder:
    """The batch ordered through the GPU, not the host (issue 42, point 4): the judge records the
    interprocess event ``placed`` once the inputs are placed, the kernel's process makes its stream
    wait for it, queues the calls, records its own interprocess event ``done`` and answers at once
    (kopt.inside.calls.BatchEvents); the judge's read waits for ``done`` on the GPU. Both host
    hand-overs (about a millisecond a batch, most of the bound's spread when the judge synchronized
    before the order and the kernel's process before its answer: 7-546 against 0.4-0.9 µs a call
    of a 180 µs op, benchmarks/probes/bound_ipc_order.py on the H100) leave the clock. A ``done``
    recorded before the calls' work ends only lets the read start early: a sampled element not yet
    written fails the check, one written later fails the second read."""

    def __init__(self):
        self.placed = torch.cuda.Event(interprocess=True)
        self.placed_handle = self.placed.ipc_handle()
        self.done, self.done_handle = None, None

    @classmethod
    def of(cls, trial: Trial) -> GpuOrder:
        """The events of the trial's kernel process, made once for it."""
        if trial.proc.gpu_order is None:
            trial.proc.gpu_order = cls()
        return trial.proc.gpu_order

    def open_done(self, prep: dict, where: str) -> None:
        handle = prep.get("done")
        if handle == self.done_handle and self.done is not None:
            return
        try:
            self.done = torch.cuda.Event.from_ipc_handle(torch.cuda.current_device(), bytes.fromhex(handle))
        except Exception as e:  # noqa: BLE001 - the kernel's process's word: a fault of the version
            raise KernelFault(f"{where}: the kernel's process answered no usable event ({type(e).__name__})") from None
        self.done_handle = handle

    def wait_on_gpu(self, ev3, timeout_s: float, where: str) -> None:
        """The read's end, polled for: a kernel's calls that never end time out here, not in a
        synchronize that cannot be interrupted."""
        deadline = _perf_counter() + timeout_s
        while not ev3.query():
            if _perf_counter() > deadline:
                raise KernelFault(f"{where}: timed out: the calls did not end in {timeout_s:g} s")
            time.sleep(0.0001)


def _timed_batch(trial: Trial, sets, draws, points, ev, where: str, gpu: GpuOrder | None):
    """Steps 2-4: the inputs placed, the L2 flushed, the calls ordered, the samples gathered; the
    batch's time per call (µs), the kernel process's answer and the gathered bytes."""
    cuda, k = ev is not None, len(sets)
    t0 = _perf_counter()
    _record(ev, 0)
    for s, d in zip(sets, draws, strict=True):
        trial.pool.place(s, d)
    if cuda:
        trial.flush_l2()
    _record(ev, 1)
    if gpu:
        gpu.placed.record()
    else:
        sync(trial.device)
    order = {"op": "batch", "sets": [s.index for s in sets], "scalars": [s.scalars for s in sets], "where": where}
    answer = trial.proc.ask(order, spin=cuda)
    if gpu:
        torch.cuda.current_stream().wait_event(gpu.done)
    _record(ev, 2)
    seen = output_samples(trial, points)
    _record(ev, 3)
    if gpu:
        gpu.wait_on_gpu(ev[3], trial.proc.timeout_s, where)
    seen = seen.cpu()  # waits for the gather
    # on a GPU its own events: the GPU's time from the placing's start to the gather's end, none of
    # the judge's host delays before or after (the kernel's work lies between them either way)
    us = ev[0].elapsed_time(ev[3]) * 1e3 / k if cuda else (_perf_counter() - t0) * 1e6 / k
    return us, answer, seen


def _record(events, i: int) -> None:
    if events:
        events[i].record()


def _check(trial: Trial, sets, draws, answer: dict, seen: torch.Tensor, where: str, points, parts) -> None:
    """Every call of the batch at the sampled elements as they were at t1: its inputs bit for bit
    its draw's, its outputs against its own draw's reference there (a call that skipped a share f of its
    work passes with probability (1 - f) ** 4096: the proof the bound needs, that each call's work
    was done inside the clock; a full comparison of every output cost 5.7 of 7.3 ms a call of a
    256 MB softmax on the H100, docs/runs/h100-bound/). Then the same elements read again. The
    draws' and the references' elements are gathered for every call first and brought to the host
    in one copy (a copy a call waited for each reference in turn)."""
    if answer.get("calls") != len(sets):
        raise KernelFault(f"{where}: the kernel's process answered {answer.get('calls')!r} calls of {len(sets)}")
    mine = [[p for p in parts if p.j == j] for j in range(len(sets))]
    # ref.py's own check judges whole outputs (their properties), never samples. (An ``updates``
    # buffer is drawn, not poisoned: its samples catch skipped work only where they land in the
    # part the call changes, one row in 8192 of mla-decode's cache; the gate and the timed calls
    # compare it whole.)
    wanted = _to_host([_wanted(trial, d, ps) for d, ps in zip(draws, mine, strict=True)])
    for j, (s, d, ps, want) in enumerate(zip(sets, draws, mine, wanted, strict=True)):
        changed = [p.name for p in ps if p.is_input and not torch.equal(seen[p.lo : p.hi], want[("in", p.name)])]
        if changed:
            raise KernelFault(f"{where}, call {j}: the kernel modified its input(s) {changed}")
        if trial.own_check:
            trial.check_or_raise(s, d, answer, f"{where}, call {j}")
            continue
        got = {p.name: p.values(seen) for p in ps if not p.is_input}
        expected = {p.name: want[("out", p.name)] for p in ps if not p.is_input}
        trial.check_or_raise(s, d, answer, f"{where}, call {j}", got=got, want=expected)
    if not torch.equal(output_samples(trial, points).cpu(), seen):
        raise KernelFault(
            f"{where}: the outputs changed after the kernel's process answered; a call's work must be done "
            "when it answers"
        )


def _wanted(trial: Trial, d, ps: list[Sampled]) -> dict[tuple[str, str], torch.Tensor]:
    """What one call's sampled elements must hold (on the draw's and the reference's devices, queued):
    ``("in", name)``, an input's bytes as the judge drew them; ``("out", name)``, an output's
    elements as the reference of the draw gives them (none where ref.py judges whole outputs)."""
    want = {("in", p.name): d.inputs[p.name].reshape(-1)[p.flat.to(d.inputs[p.name].device)] for p in ps if p.is_input}
    want = {k: t.contiguous().view(torch.uint8) for k, t in want.items()}
    if not trial.own_check:
        ref = trial.expected_at(d, {p.name: p.flat for p in ps if not p.is_input})
        want.update({("out", k): t for k, t in ref.items()})
    return want


def _to_host(calls: list[dict]) -> list[dict]:
    """Each call's tensors (any device, any dtype) on the host, in one copy a device: one wait for
    the GPU, not one a tensor. On a GPU, what was copied is zeroed there (the references' elements
    are the judge's: kopt.measure.reference.scrub)."""
    flat = [(j, k, t) for j, c in enumerate(calls) for k, t in c.items()]
    out: list[dict] = [{} for _ in calls]
    for dev in {t.device for _, _, t in flat}:
        here = [(j, k, t) for j, k, t in flat if t.device == dev]
        raw = [t.contiguous().reshape(-1).view(torch.uint8) for _, _, t in here]
        joined = torch.cat(raw)
        host = joined.cpu()  # a new tensor on the host, whatever the device
        if dev.type != "cpu":
            joined.zero_()
            for _, _, t in here:
                t.zero_()
        at = 0
        for (j, k, t), r in zip(here, raw, strict=True):
            out[j][k] = _typed(host[at : at + r.numel()], t.dtype).reshape(t.shape)
            at += r.numel()
    return out


@contextlib.contextmanager
def float32_checks(trial: Trial):
    """The batches' calls checked against a float32 reference on the GPU, tolerances widened as
    for any float32 reference (kopt.measure.reference): each of them must show its work was done,
    and a float64 reference cost 8 ms a call of a 256 MB softmax on the H100, most of a rule
    `measure`; the gate, the timed calls and the clock's calls are checked in float64."""
    if trial.device != "cuda" or trial.placement.device != "cuda" or trial.placement.widened:
        yield  # the CPU; a reference too big for the GPU in float64 stays where it was placed
        return
    before = trial.placement
    trial.placement = reference.Placement("cuda", reference.FLOAT32, why="the bound's batches: float32 on the GPU")
    trial.tol = trial._tolerances()
    try:
        yield
    finally:
        trial.placement = before
        trial.tol = trial._tolerances()


def preload() -> threading.Thread:
    """scipy.stats imported in a thread of the judge's (started while the gate runs, which waits on
    the GPU), not inside the first config's bound: 0.6-2.6 s of CPU that sat between its batches."""
    t = threading.Thread(target=importlib.import_module, args=("scipy.stats",), name="kopt-scipy", daemon=True)
    t.start()
    return t


def bound_se(xs: list[float], estimate: str = "faster-half") -> float:
    """The standard error of the bound's estimate over the batches ``xs``: half the central 68%
    of its percentile bootstrap (scipy.stats.bootstrap, every batch resampled, a fixed seed so a
    rerun reproduces it, the batches sorted first so their order, which a kernel can choose by
    which batches it slows, changes nothing); infinite under 3 batches. The faster half's own spread read 1.5-2.8x too
    small in simulation (a review), so batches stopped early and three such errors were passed by
    9-33% of honest repeats; the bootstrap's, 3-8% (tests/measure/test_bound.py)."""
    if len(xs) < 3:
        return math.inf
    if max(xs) == min(xs):
        return 0.0
    from scipy import stats  # here: 1-2 s of CPU to import, and a judge on the CPU makes no batches

    got = stats.bootstrap(
        (np.sort(np.asarray(xs, dtype=float)),),  # sorted: the order the kernel slowed batches in is no matter
        _ESTIMATES[estimate],
        n_resamples=2000,
        confidence_level=0.6827,
        method="percentile",
        random_state=np.random.default_rng(0),  # "rng" from scipy 1.15 only
    )
    return float(got.confidence_interval.high - got.confidence_interval.low) / 2


def _faster_half_median(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """``lower_half``'s median along ``axis`` (vectorized for the bootstrap's resamples)."""
    keep = _faster_half(x.shape[axis])
    return np.median(np.sort(x, axis=axis).take(range(keep), axis=axis), axis=axis)


def _faster_half(n: int) -> int:
    """How many of ``n`` batches are the faster half: at least 3 where there are."""
    return max(min(3, n), (n + 1) // 2)


_ESTIMATES = {"faster-half": _faster_half_median, "all": np.median}


def lower_half(xs: list[float]) -> list[float]:
    """The faster half of the batches (at least 3 where there are): what a batch takes undisturbed.
    A batch's time only grows by what disturbs it (a process woken late, the other's host
    hand-over): on the H100 an honest softmax's 12 batches read 372.4-373.3 µs a call but for 7 of
    them at 376.9-582.5, and their median 384.5 left the version unresolved
    (docs/runs/h100-bound/session10/fresh-17/); no batch is faster than its calls' work, which every
    call's check shows was done inside the clock."""
    return sorted(xs)[: _faster_half(len(xs))]


def bound_calls(trial: Trial, key: str, opts: dict, est_us: float) -> dict:
    """The config's bound (the module's docstring): ``bound_batches_min`` batches, then more while
    the standard error is over ``bound_target_pct`` % of ``est_us`` (the events' median: it only
    sets how many batches are made) and ``bound_batches_max`` allow."""
    k = batch_size(trial)
    lo, hi = int(opts.get("bound_batches_min", 6)), int(opts.get("bound_batches_max", 12))
    target = float(opts.get("bound_target_pct", 0.25)) / 100 * max(est_us, 0.0)
    estimate = opts.get("bound_estimate", "faster-half")
    runs: list[dict] = []
    if trial.device == "cuda":
        trial.flush_l2()  # its buffer allocated before the first batch's clock, not inside it
    with float32_checks(trial):
        while True:
            runs.append(one_batch(trial, k, key, len(runs)))
            if len(runs) >= hi or (len(runs) >= lo and bound_se([r["us"] for r in runs], estimate) <= target):
                break
    us = [r["us"] for r in runs]
    return {
        "bound_us": float(_ESTIMATES[estimate](np.asarray(us))),
        "bound_se_us": bound_se(us, estimate) if len(us) >= 3 else None,
        "bound_calls": k,
        "bound_host_us": float(np.median([r["host_us"] for r in runs])),
        "bound_batches": runs,
    }
