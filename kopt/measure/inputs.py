"""Inputs that never repeat predictably (the judge's): fresh seeds, a pool of input sets, its order.

* Seeds: by default every draw takes a fresh seed from the OS's entropy at the moment it is drawn
  (``secrets``), so nothing in the kernel's process tells the next inputs in advance; each seed is
  recorded where it was used. An integer ``seed`` in the config derives the schedule from it
  instead, to repeat a run exactly (predictable: for reproduction, not for judging).
* Pool: several input sets, each in its own buffers of the judge's arena (kopt.measure.arena: the
  kernel's process maps them, the judge reads them back), so addresses differ, as many as fit in the
  memory left after the reference's own need (between ``min_sets`` and ``max_sets``; fewer only
  when memory forces it, and the reason is recorded). The sets are visited in random cycles (each set
  once per cycle, never the same set twice in a row; the timed and the profiled calls are whole
  cycles, so every set's buffers weigh the same in the median), and a set is redrawn with a fresh seed before every call: the
  kernel never sees the same input values twice, so no cache keyed on pointers, objects, tensor
  versions or sampled values can replay a result.
"""

from __future__ import annotations

import random
import secrets
import zlib
from dataclasses import dataclass
from typing import Any

import torch

from kopt.measure.arena import Arena, Plan
from kopt.measure.device import poison
from kopt.measure.faults import KernelFault
from kopt.measure.reference import Draw, Layout, draw, human_bytes


class Seeds:
    def __init__(self, fixed: int | None, key: str, phase: str):
        self.fixed, self.key, self.phase, self.i = fixed, key, phase, 0

    @property
    def policy(self) -> str:
        if self.fixed is None:
            return "fresh: a new seed from the OS's entropy for every draw"
        return f"derived from seed={self.fixed} (a fixed, predictable schedule, for reproducing a run)"

    def next(self) -> int:
        if self.fixed is None:
            return secrets.randbits(31)
        self.i += 1
        return zlib.crc32(f"{self.fixed}:{self.key}:{self.phase}:{self.i}".encode()) % (2**31)


@dataclass
class InputSet:
    index: int
    seed: int
    tensors: dict[str, torch.Tensor]  # this set's buffers in the arena: setup's tensors and the output buffers
    scalars: dict[str, Any]  # setup()'s other inputs (numbers, dtypes, ...), sent with each call

    def outputs(self, layout: Layout) -> dict[str, torch.Tensor]:
        return {n: self.tensors[n] for n in layout.names}


def _like(d: Draw, layout: Layout) -> dict[str, torch.Tensor]:
    """A set's buffers as ``d`` has them (shapes, strides, dtypes), the outputs not among the inputs
    as meta tensors."""
    like = dict(d.tensors())
    for o in layout.outputs:
        if not o.in_inputs:
            like[o.name] = torch.empty(o.shape, dtype=getattr(torch, o.dtype), device="meta")
    return like


def set_bytes(d: Draw, layout: Layout) -> int:
    """The bytes one set takes in an arena: each buffer's span (a strided input's gaps too), aligned."""
    plan = Plan()
    plan.add(_like(d, layout))
    return plan.size


def pool_size(
    one_set: int, free: int, reserve: int, max_sets: int, min_sets: int, in_free_block: int = 0
) -> tuple[int, str]:
    """How many input sets fit in ``free`` bytes after ``reserve`` (the reference, its inputs'
    regeneration, the comparison and the L2 flush), or in a block an earlier arena freed
    (``in_free_block`` sets, where ``free`` still holds the reserve), and why that many."""
    fit = max(free - reserve, 0) // max(one_set, 1)
    if free >= reserve:
        fit = max(fit, in_free_block)
    n = int(min(max_sets, fit))
    if n >= min_sets:
        why = f"{n} sets of {human_bytes(one_set)}" + (" (the configured maximum)" if n == max_sets else " (memory)")
    else:
        why = (
            f"only {max(n, 1)} set(s) of {human_bytes(one_set)} fit in {human_bytes(free)} free after "
            f"{human_bytes(reserve)} reserved for the reference and the checks (wanted {min_sets}); every call "
            "still gets freshly drawn values"
        )
    return max(n, 1), why


class Pool:
    """``n_sets`` input sets in one arena shared with the kernel's process; ``first``: a draw of
    this config (the probe's), whose tensors give the sets their shapes and strides."""

    def __init__(self, ref, cfg: dict, layout: Layout, device: str, seeds: Seeds, n_sets: int, why: str, first: Draw):
        self.ref, self.cfg, self.layout, self.device, self.seeds, self.why = ref, cfg, layout, device, seeds, why
        like = _like(first, layout)
        self.plan = Plan()
        for _ in range(n_sets):
            self.plan.add(like)
        self.arena = Arena(self.plan, device)
        self.order = list(first.inputs)  # setup()'s order: a CUDA solve takes its arguments so
        self.sets = [InputSet(i, 0, self.arena.tensors(i), {}) for i in range(n_sets)]
        self.draws = 0
        for s in self.sets:
            self.redraw(s)
        self.rng = random.Random(secrets.randbits(64))
        self.last: int | None = None
        self.cycle: list[InputSet] = []

    def next(self) -> InputSet:
        """The next set of a random cycle through all sets, never the last one again (unless alone).

        Each cycle visits every set once, so calls spread evenly over the sets' buffers: a kernel
        whose time depends on where its buffers lie is measured over all placements alike."""
        if not self.cycle:
            self.cycle = self.rng.sample(self.sets, len(self.sets))
            if len(self.cycle) > 1 and self.cycle[-1].index == self.last:  # popped from the end
                self.cycle[0], self.cycle[-1] = self.cycle[-1], self.cycle[0]
        s = self.cycle.pop()
        self.last = s.index
        return s

    def new_cycle(self) -> None:
        """Start a fresh cycle: the next ``k * len(sets)`` calls visit every set ``k`` times."""
        self.cycle = []

    def redraw(self, s: InputSet) -> Draw:
        """Fresh values (a new seed) into the set's arena buffers; the draw itself stays the judge's
        own (the reference runs on it, and the inputs are compared with it after the call). Output
        buffers keep their memory: ``poison`` fills them before the call."""
        d = self.draw(s)
        self.place(s, d)
        return d

    def draw(self, s: InputSet) -> Draw:
        """Fresh values (a new seed) for set ``s``, in the judge's private memory only: the arena still
        holds the last ones until ``place`` (the bound's batches draw before their clock starts and
        place inside it, so no input of a batch is in the kernel's reach before the batch is timed)."""
        d = draw(self.ref, self.cfg, self.seeds.next(), self.device)
        for k, v in d.inputs.items():
            old = s.tensors.get(k)
            if isinstance(v, torch.Tensor) and (old is None or old.shape != v.shape or old.dtype != v.dtype):
                raise KernelFault(f"ref.py: setup() returned '{k}' with another shape or dtype for seed {d.seed}")
        s.seed = d.seed
        self.draws += 1
        return d

    def place(self, s: InputSet, d: Draw) -> None:
        """Draw ``d``'s inputs copied into set ``s``'s arena buffers; its scalars sent with the call."""
        for k, v in d.inputs.items():
            if not isinstance(v, torch.Tensor):
                s.scalars[k] = v
            elif d.placed(k):
                s.tensors[k].copy_(v)

    def poison(self, s: InputSet) -> None:
        for n, t in s.outputs(self.layout).items():
            if n not in self.layout.updates:
                poison(t)

    def record(self) -> dict:
        return {"sets": len(self.sets), "why": self.why, "draws": self.draws, "seeds": self.seeds.policy}
