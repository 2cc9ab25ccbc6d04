"""One config's checked calls of the kernel under test, as the judge makes them (trusted side).

The correctness gate, the timer and the profiler all call the kernel through a ``Trial``, so
every call, timed or not, follows the same protocol:

1. ``prepare``: the next input set of the pool, redrawn with a fresh seed into the judge's arena,
   outputs poisoned; the draw itself stays in the judge's private memory;
2. ``call``: one order to the kernel's process (kopt.measure.boundary): run the kernel on that
   set's buffers; its answer is its own report of its time;
3. ``check``: at once, the judge copies the outputs out of its own mapping of the arena (what the
   kernel left there when it answered is what is checked), compares the arena's inputs bit for bit
   with the private draw (mutation), runs the reference on the private draw (float64 where it
   fits), and compares each output with its own tolerance.

The kernel's process never sees the expected outputs, the tolerances or the verdict.
"""

from __future__ import annotations

import time
from dataclasses import replace

import torch

from kopt.measure import reference
from kopt.measure.arena import sets_in_a_free_block
from kopt.measure.boundary import KernelProcess
from kopt.measure.device import L2_FLUSH_BYTES, bytes_equal, sync
from kopt.measure.faults import KernelFault
from kopt.measure.inputs import InputSet, Pool, Seeds, pool_size, set_bytes
from kopt.measure.reference import Draw, available_bytes, human_bytes
from kopt.measure.verify import CHUNK, compare, tolerance_for

DROP_TIMEOUT_S = 60.0  # letting go of a mapping and a cache: no kernel's work


def release_arena(proc: KernelProcess, device: str) -> None:
    """On a GPU, the kernel's process told to let go of the last config's arena (kopt.inside.serve's
    ``drop``; a process told to leave does so too): before the next pool is sized, and before the
    process is ended. torch keeps a shared block allocated while a process maps it, and a process
    killed never lets go, so each pool was sized beside the last one, and the clock's beside every
    arena of the processes ended before (H100, the softmax: the judge's allocations grew 32 -> 60
    GiB through the clock's configs, one run's v1 got a pool of 16 sets against 32,
    benchmarks/probes/trial_memory.sh). A process that keeps its mapping only shrinks its own
    version's pools."""
    if device == "cuda" and proc.maps_arena:
        proc.ask({"op": "drop"}, timeout_s=DROP_TIMEOUT_S)
        proc.maps_arena = False


class Trial:
    def __init__(self, ref, proc: KernelProcess, item: dict, *, device: str, opts: dict, phase: str, max_sets: int = 1):
        self.ref, self.proc, self.cfg, self.device = ref, proc, item["config"], device
        self.key, self.flush = item["key"], None  # the judge's L2 flush buffer (``judged``), when used
        # ref.py judges the outputs itself (``reference.own_check``)
        self.own_check = callable(getattr(ref, "check_outputs", None))
        self.seeds = Seeds(opts.get("seed"), self.key, phase)
        proc.where = f"config {self.key}"
        release_arena(proc, device)
        self.layout, probe_draw = reference.probe(ref, self.cfg, device, self.seeds.next())
        limit = int(float(opts.get("reference_memory_limit_mb") or 0) * 2**20)
        self.placement = (
            reference.place(ref, probe_draw, self.layout, device, limit)
            if not self.own_check  # its check never reads an expected output: no float64 run
            else reference.checking_plan(ref, probe_draw, self.layout, device)
        )
        one = set_bytes(probe_draw, self.layout)
        n, why = self._pool_size(one, max_sets, int(opts.get("min_pool_sets", 4)) if max_sets > 1 else 1)
        self.pool = self._pool(ref, one, n, why, probe_draw)
        del probe_draw
        self.item = item
        self.tol = self._tolerances()
        # a torch baseline is the reference itself: called with setup()'s inputs only
        with_buffers = not opts.get("torch_baseline", False)
        proc.where = f"config {self.key}"
        answer = proc.ask(
            {
                "op": "config",
                "config": self.cfg,
                "handle": self.pool.arena.handle(),
                "slots": self.pool.plan.sets,
                "order": self.pool.order,
                "outputs": self.layout.names,
                "with_buffers": with_buffers,
                # a gpu-mode check compares values, its dtypes promoted (prefixsum's float32 submission
                # against its float64 ref_kernel): a returned float of another width is cast
                "casts_floats": bool(getattr(ref, "casts_returned_floats", False)),
                "flush_l2": bool(opts.get("flush_l2", True)),
            },
            fds=self.pool.arena.fds(),
        )
        self.pool.arena.sent()
        proc.maps_arena = True
        l2 = answer.get("l2") if isinstance(answer.get("l2"), dict) else {}
        # the kernel process's own report of its persisting-L2 reset: text only, and labelled so
        self.l2 = {k: (str(l2[k])[:300] if l2.get(k) is not None else None) for k in ("how", "error") if k in l2}
        self.l2["reported_by"] = "the kernel's process"

    def _tolerances(self) -> dict[str, dict]:
        """Each output's tolerance: the config's, widened where the reference runs in float32;
        setup()'s own for the config's data where it gives one (a floor to the dtypes' too)."""
        tolerances, tol = self.item.get("tolerances") or {}, self.config_tolerance()
        if self.layout.tolerance:
            tolerances = {dt: {k: max(v[k], tol[k]) for k in ("atol", "rtol")} for dt, v in tolerances.items()}
        return {o.name: tolerance_for(o, tolerances, tol, self.placement.widened) for o in self.layout.outputs}

    def config_tolerance(self) -> dict:
        """The config's tolerance: setup()'s own for its data, else target.yaml's."""
        return self.layout.tolerance or self.item["tol"]

    def _expected(self, d: Draw) -> dict[str, torch.Tensor]:
        """The reference's outputs for ``d``. Where float64 on the GPU runs out of memory beside this
        phase's input pool and the kernel's process (sized before either held it: on the H100's 80 GB
        KernelBench's RMSNorm at its own size, 7 GiB a tensor, failed its timing so), the reference
        moves to float32 on the GPU from then on, its tolerances widened and the reason recorded."""
        try:
            return reference.expected(self.ref, d.inputs, self.layout, self.placement)
        except Exception as e:  # noqa: BLE001 - only running out of memory in float64 on the GPU moves it
            if self.placement.device != "cuda" or self.placement.widened or not reference.ran_out_of_memory(e):
                raise
        torch.cuda.empty_cache()
        before = "" if self.placement.why == "fits" else f"{self.placement.why}; "
        why = f"{before}float64 on cuda ran out of memory beside the input pool, so float32"
        self.placement = reference.Placement("cuda", reference.FLOAT32, why=why)
        self.tol = self._tolerances()
        return reference.expected(self.ref, d.inputs, self.layout, self.placement)

    def _pool_size(self, one: int, max_sets: int, min_sets: int) -> tuple[int, str]:
        if self.device == "cuda":
            torch.cuda.ipc_collect()  # arenas no process maps any more (``release_arena``)
            torch.cuda.empty_cache()
        ref_peak = self.placement.peak_bytes if self.placement.device == self.device else 0
        # the private draw and the outputs' copy, the reference, the comparison, the kernel's L2 flush
        # and the judge's (``judged``)
        reserve = (ref_peak or 0) + 2 * one + 6 * CHUNK * 8 + 2 * L2_FLUSH_BYTES
        free = available_bytes(self.device)  # outside the arenas' pool
        reused = sets_in_a_free_block(one) if self.device == "cuda" else 0
        return pool_size(one, int(free * 0.9), reserve, max_sets, min_sets, in_free_block=reused)

    def _pool(self, ref, one: int, n: int, why: str, first: Draw) -> Pool:
        """The pool of ``n`` sets, halved while the GPU runs out of memory making it (memory another
        process took after the sizing, or an arena the allocator could not place: gpu-mode's grayscale
        at 16384 on an H200 lost v0's every figure so): fewer sets, said in the pool's record; a
        single set that does not fit is the error it was."""
        sized, halved = why, 0
        while True:
            try:
                return Pool(ref, self.cfg, self.layout, self.device, self.seeds, n, why, first)
            except Exception as e:  # noqa: BLE001 - only running out of the GPU's memory is retried
                if self.device != "cuda" or n == 1 or not reference.ran_out_of_memory(e):
                    raise
            torch.cuda.empty_cache()
            n, halved = n // 2, halved + 1
            why = f"{n} set(s) of {human_bytes(one)}, halved {halved} time(s): the GPU ran out of memory making the pool ({sized})"

    def prepare(self) -> tuple[InputSet, Draw]:
        s = self.pool.next()
        d = self.pool.redraw(s)
        self.pool.poison(s)
        sync(self.device)  # the arena is ready before the kernel's process is told to run
        return s, d

    def call(self, s: InputSet, *, where: str, timed: bool, **how) -> dict:
        """One call of the kernel on set ``s``, ordered to its process; its answer (its own times)."""
        order = {"op": "call", "set": s.index, "scalars": s.scalars, "timed": timed, "where": where}
        order.update({k: v for k, v in how.items() if k != "while_running"})
        return self.proc.ask(order, while_running=how.get("while_running"))

    def judged(self, where: str, **how) -> dict:
        """One call as the clock's processes make them (kopt.measure.outside_clock): drawn; the L2
        flushed from the judge's own CUDA context (no launch of the kernel's process) and the GPU
        idle; ordered without spin or events; timed on the judge's clock until its own copy of the
        outputs is done (kept as ``clock_wall_us``, which holds Nsight Compute's own work); checked.
        Its seed, input set and wall time (µs)."""
        s, d = self.prepare()
        self.flush_l2()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        answer = self.call(s, where=where, timed=False, **how)
        got = self.outputs_now(s)
        torch.cuda.synchronize()
        wall_us = (time.perf_counter() - t0) * 1e6
        self.check_or_raise(s, d, answer, where, got=got)
        return {"seed": s.seed, "set": s.index, "wall_us": round(wall_us, 2)}

    def flush_l2(self) -> None:
        """The L2 flushed from the judge's own CUDA context (a 256 MB write; queued, not waited for)."""
        if self.flush is None:
            self.flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")
        self.flush.zero_()

    def outputs_now(self, s: InputSet) -> dict[str, torch.Tensor]:
        """The judge's copy of what the kernel left in the arena's outputs."""
        return {n: t.clone() for n, t in s.outputs(self.layout).items()}

    def expected_at(self, d: Draw, at: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """The reference's outputs for ``d`` at the row-major element indices ``at`` (output name ->
        indices), left on the reference's device, queued, not waited for; the whole outputs scrubbed."""
        exp = self._expected(d)
        try:
            return {name: exp[name].reshape(-1)[at[name].to(exp[name].device)] for name in self.layout.names}
        finally:
            reference.scrub(exp)

    def check(
        self, s: InputSet, d: Draw, answer: dict, detail: bool = False, got: dict | None = None, want=None
    ) -> dict:
        """The outputs the kernel left in the arena for draw ``d`` (``got``: the judge's copy, taken
        when it answered unless given), against the reference of ``d``; with ``want`` (output name ->
        the reference's elements at some positions, ``expected_at``), ``got`` holds the outputs'
        elements there only, they alone are compared, and the inputs are the caller's to check
        (kopt.measure.bound samples them too)."""
        got = self.outputs_now(s) if got is None else got
        rec = {"seed": s.seed, "set": s.index, "ok": False, "max_abs": 0.0, "max_rel": 0.0, "reason": None}
        mutated = (
            [] if want is not None else [k for k in self.layout.inputs if not bytes_equal(s.tensors[k], d.inputs[k])]
        )
        if answer.get("returned_bad"):
            rec["reason"] = str(answer["returned_bad"])[:500]
        elif mutated:
            rec["reason"] = f"the kernel modified its input(s) {mutated}"
        if rec["reason"]:
            return rec
        if self.own_check and want is None:
            rec["reason"] = reference.own_check(self.ref, d.inputs, got)
            rec["ok"] = rec["reason"] is None
            return rec
        exp = self._expected(d) if want is None else want
        try:
            worst = None
            for name in self.layout.names:
                spec = self.layout.spec(name)
                if want is not None:
                    spec = replace(spec, shape=tuple(exp[name].shape))
                r = compare(got[name], exp[name], spec, self.tol[name], detail)
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
            if want is None:
                reference.scrub(exp)
        rec["ok"] = worst["ok"]
        if worst["reason"]:
            rec["reason"] = f"output '{worst['output']}': {worst['reason']}"
        return rec

    def check_or_raise(
        self, s: InputSet, d: Draw, answer: dict, where: str, got: dict | None = None, want=None
    ) -> None:
        rec = self.check(s, d, answer, got=got, want=want)
        if not rec["ok"]:
            raise KernelFault(
                f"{where}: the outputs are wrong or unwritten ({rec['reason']}; they were poisoned, or drawn where "
                "the call updates them, and the inputs freshly drawn before the call); the kernel must do all its "
                "work inside every call"
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
            "checked_by": "ref.py's check_outputs()" if self.own_check else "element-wise against the reference",
        }
