"""One config's checked calls of the kernel under test (child side).

The correctness gate, the timer and the profiler all call the kernel through a ``Trial``, so
every call, timed or not, follows the same protocol:

1. ``prepare``: the next input set of the pool, redrawn with a fresh seed, outputs poisoned;
2. ``call``: the kernel on that set (nothing else happens here: the caller brackets it);
3. ``check``: after the call, the inputs are regenerated from the set's seed and compared bit for
   bit with what the kernel was given (mutation), the reference runs on them (float64 where it
   fits), each output is compared with its own tolerance, and the expected outputs are zeroed.

Before the first call, ``probe`` learns the outputs' layout and ``place`` where the reference fits;
their draws are never shown to the kernel.
"""

from __future__ import annotations

from typing import Any

import torch

from kopt.measure import interpreter, reference
from kopt.measure.device import Guard, bytes_equal
from kopt.measure.faults import KernelFault
from kopt.measure.inputs import InputSet, Pool, Seeds, pool_size, set_bytes
from kopt.measure.reference import available_bytes
from kopt.measure.verify import CHUNK, compare, tolerance_for

L2_FLUSH_BYTES = 256 * 1024 * 1024


class Trial:
    def __init__(
        self, ref, kernel, item: dict, *, device: str, guard: Guard, opts: dict, phase: str, max_sets: int = 1
    ):
        self.ref, self.kernel, self.cfg, self.device, self.guard = ref, kernel, item["config"], device, guard
        self.key = item["key"]
        self.seeds = Seeds(opts.get("seed"), self.key, phase)
        self.layout, probe_draw = reference.probe(ref, self.cfg, device, self.seeds.next())
        limit = int(float(opts.get("reference_memory_limit_mb") or 0) * 2**20)
        self.placement = reference.place(ref, probe_draw, self.layout, device, limit)
        one = set_bytes(probe_draw, self.layout)
        del probe_draw
        n, why = self._pool_size(one, max_sets, int(opts.get("min_pool_sets", 4)) if max_sets > 1 else 1)
        self.pool = Pool(ref, self.cfg, self.layout, device, self.seeds, n, why)
        self.tol = {
            o.name: tolerance_for(o, item.get("tolerances") or {}, item["tol"], self.placement.widened)
            for o in self.layout.outputs
        }
        # a torch baseline is the reference itself: called with setup()'s inputs only
        self.with_buffers = not opts.get("torch_baseline", False)

    def _pool_size(self, one: int, max_sets: int, min_sets: int) -> tuple[int, str]:
        if self.device == "cuda":
            torch.cuda.empty_cache()
        ref_peak = self.placement.peak_bytes if self.placement.device == self.device else 0
        reserve = (ref_peak or 0) + one + 6 * CHUNK * 8 + L2_FLUSH_BYTES  # regeneration, comparison, flush
        free = available_bytes(self.device)
        return pool_size(one, int(free * 0.9), reserve, max_sets, min_sets)

    def prepare(self) -> InputSet:
        s = self.pool.next()
        self.pool.redraw(s)
        self.pool.poison(s)
        return s

    def call(self, s: InputSet) -> Any:
        try:
            return self.kernel(**s.args(self.with_buffers))
        except KernelFault:
            raise
        except Exception as e:
            hint = interpreter.explain(e, self.kernel) if self.device == "cpu" else None
            raise KernelFault(hint or f"run_kernel raised {type(e).__name__}: {e}") from e

    def check(self, s: InputSet, ret: Any, detail: bool = False) -> dict:
        """The outputs of the call on ``s`` (``ret``: what the kernel returned) against the reference."""
        rec = {"seed": s.seed, "set": s.index, "ok": False, "max_abs": 0.0, "max_rel": 0.0, "reason": None}
        try:  # what it returned, when tensors; else the buffers it was given
            got = (
                s.outputs(self.layout)
                if reference.returned_tensors(ret) is None
                else reference.outputs_of(ret, self.layout.names, {}, "run_kernel")
            )
        except KernelFault as e:
            rec["reason"] = str(e)
            return rec
        regen = reference.draw(self.ref, self.cfg, s.seed, self.device)
        mutated = [k for k in self.layout.inputs if not bytes_equal(s.inputs[k], regen.inputs[k])]
        if mutated:
            rec["reason"] = f"the kernel modified its input(s) {mutated}"
            return rec
        exp = reference.expected(self.ref, regen.inputs, self.layout, self.placement)
        del regen
        try:
            worst = None
            for name in self.layout.names:
                r = compare(got[name], exp[name], self.layout.spec(name), self.tol[name], detail)
                if (
                    worst is None
                    or (not r["ok"] and worst["ok"])
                    or (r["ok"] == worst["ok"] and r["max_abs"] > worst["max_abs"])
                ):
                    worst = dict(r, output=name)
                rec["max_abs"], rec["max_rel"] = max(rec["max_abs"], r["max_abs"]), max(rec["max_rel"], r["max_rel"])
                if not r["ok"] and not detail:
                    break
        finally:
            reference.scrub(exp)
        rec["ok"] = worst["ok"]
        if worst["reason"]:
            rec["reason"] = f"output '{worst['output']}': {worst['reason']}"
        return rec

    def check_or_raise(self, s: InputSet, ret: Any, where: str) -> None:
        self.guard.check(where)
        rec = self.check(s, ret)
        if not rec["ok"]:
            raise KernelFault(
                f"{where}: the outputs are wrong or unwritten ({rec['reason']}; they were poisoned and the inputs "
                "freshly drawn before the call); the kernel must do all its work inside every call"
            )

    def record(self) -> dict:
        return {
            "pool": self.pool.record(),
            "reference": self.placement.record(),
            "outputs": [
                {"name": o.name, "shape": list(o.shape), "dtype": o.dtype, "tolerance": self.tol[o.name]}
                for o in self.layout.outputs
            ],
            "reference_returns": self.layout.returns,
        }
