"""The clock that decides, read outside the kernel's process (trusted side).

The CUDA events and torch.profiler's trace are recorded in the kernel's process, which may rewrite
them. The deciding GPU time comes instead from Nsight Compute: a second kernel process runs under
``ncu`` (kopt.profilers.ncu.clock_command: ``gpu__time_duration`` of every launch, one pass, no
cache or clock control), and the ``ncu`` front-end process, which the kernel's process cannot
write to or trace (Landlock), writes the record that the judge parses here once that process and
everything it started have ended.

Each config: three warm-up calls (compilation, autotuning), then ``clock_calls`` calls (whole
cycles of its input pool), every one drawn fresh, its outputs poisoned and checked by the judge
as everywhere. Before each counted call the judge flushes the L2 from its own process (a 256 MB
write: no launch of the kernel's process is the harness's, so every launch counts). Each call runs
inside an NVTX range named by a label the judge draws at random for that call; the kernel's
process learns it only when the call is ordered.

A launch belongs to the call whose label is innermost on its thread's NVTX stack. The kernel can
push and pop ranges, so the labels are held to what the order of launches allows
(``per_call``): after the first labelled launch every launch carries a label the judge drew
(launches from another thread or process carry none), labels never go back to an earlier call
than a launch before them, and the last warm-up call and every counted call of a config show the
same number of launches: relabelling launches into another call changes its count. The figure of a
config is the mean over its counted calls, which moving time between calls does not change.

What Nsight Compute does not see (copies, memsets, host work, a process it does not follow, work
after the kernel stops the profiler through the CUDA API) is not in this clock: the judge's own
wall time per call bounds it (kopt.loop.decide).
"""

from __future__ import annotations

import os
import secrets
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from kopt.measure.boundary import KernelProcess
from kopt.measure.faults import KernelFault
from kopt.measure.timing import median_ci_pct, whole_cycles
from kopt.measure.trial import Trial
from kopt.profilers import ncu

WARMUP_CALLS = 3
# The in-process clocks (events, torch.profiler) may sit above the GPU time of the launches (the
# events bracket the gaps between launches and their own pair's cost), not below it by more than
# this fraction plus SECOND_CLOCK_SLACK_US: less is a time the GPU did not show.
SECOND_CLOCK_TOL = 0.05
SECOND_CLOCK_SLACK_US = 0.5
CLOCK_NAME = "ncu"  # bench.csv's clock column: Nsight Compute, outside the kernel's process
IN_PROCESS = "in-process"


@dataclass
class Call:
    """One call the judge ordered in the clock's kernel process, in order."""

    label: str
    key: str
    counted: bool
    seed: int = 0
    set: int = 0
    wall_us: float = 0.0


@dataclass
class Ledger:
    """The calls of the clock's kernel process, as the judge ordered them."""

    calls: list[Call] = field(default_factory=list)


def clocked_configs(
    ref, kernel: str, items: list[dict], *, tool: str, opts: dict, go, sandbox: bool, timeout_s: float
) -> dict[str, dict]:
    """Every config's calls in a second kernel process under Nsight Compute (``tool``), made ready by
    ``go(proc)`` (the kernel imported); per config, what ``per_call`` reads from the record."""
    with tempfile.TemporaryDirectory(prefix="kopt-clock-", dir=os.environ.get("KOPT_SCRATCH_ROOT")) as tmp:
        csv_path, ledger = Path(tmp) / "ncu_clock.csv", Ledger()
        wrapper = ncu.clock_command(tool, str(csv_path))
        proc = KernelProcess(kernel, wrapper=wrapper, sandbox=sandbox, timeout_s=timeout_s)
        try:
            go(proc)
            run_calls(ref, proc, items, opts=opts, ledger=ledger)
        finally:
            proc.finish()  # no process of the kernel's is left when the record is read
        return per_call(read_record(csv_path), ledger)


def run_calls(ref, proc: KernelProcess, items: list[dict], *, opts: dict, ledger: Ledger) -> None:
    """Every config's warm-up and counted calls in ``proc``, each checked, recorded in ``ledger``."""
    import torch

    from kopt.measure.device import L2_FLUSH_BYTES

    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")
    calls = int(opts.get("clock_calls", 30))
    for item in items:
        trial = Trial(
            ref, proc, item, device="cuda", opts={**opts, "flush_l2": False}, phase="clock",
            max_sets=int(opts.get("pool_sets", 8)),
        )  # fmt: skip
        for i in range(WARMUP_CALLS):
            _one(trial, ledger, f"config {item['key']}, clock warm-up call {i}", counted=False)
        for i in range(whole_cycles(trial, calls)):
            _one(trial, ledger, f"config {item['key']}, clocked call {i}", counted=True, flush=flush)
        del trial


def _one(trial: Trial, ledger: Ledger, where: str, *, counted: bool, flush=None) -> None:
    import torch

    s, d = trial.prepare()
    if flush is not None:
        flush.zero_()  # in the judge's own CUDA context: no launch of the kernel's process
        torch.cuda.synchronize()
    call = Call(secrets.token_hex(8), trial.key, counted, s.seed, s.index)
    t0 = time.perf_counter()
    answer = trial.call(s, where=where, timed=False, nvtx=[ncu.CLOCK_RANGE + call.label], release=False)
    call.wall_us = (time.perf_counter() - t0) * 1e6
    trial.check_or_raise(s, d, answer, where)
    ledger.calls.append(call)


def read_record(csv_path: Path) -> list[dict]:
    """The launches Nsight Compute recorded, or a fault when it left no readable record."""
    try:
        return ncu.clock_launches(csv_path.read_text(errors="replace"))
    except (OSError, ValueError) as e:
        raise KernelFault(
            f"Nsight Compute left no readable record of the calls ({e}): the clock that decides is missing"
        ) from None


def per_call(launches: list[dict], ledger: Ledger) -> dict[str, dict]:
    """Per config: the GPU time of each counted call (µs, its launches summed) and the launches per
    call; a fault when the launches' labels break what their order allows (module docstring)."""
    index = {c.label: i for i, c in enumerate(ledger.calls)}
    us, counts = [0.0] * len(ledger.calls), [0] * len(ledger.calls)
    first = next((j for j, ln in enumerate(launches) if ln["label"] is not None), len(launches))
    last = 0
    for ln in launches[first:]:
        i = index.get(ln["label"])
        what = f"launch of {str(ln['kernel'])[:80]!r} (process {ln['process']})"
        if i is None:
            why = "in no call's range" if ln["label"] is None else "in a range kopt never opened"
            raise KernelFault(
                f"Nsight Compute saw a {what} {why}: every launch after the first call must be made inside "
                "the call that kopt ordered, on its thread"
            )
        if i < last:
            raise KernelFault(
                f"Nsight Compute saw a {what} labelled as an earlier call ({ledger.calls[i].key}) after launches "
                "of a later one: the kernel relabels its launches"
            )
        if ln["us"] is None:
            raise KernelFault(f"Nsight Compute gave no GPU time for a {what}")
        last, us[i], counts[i] = i, us[i] + ln["us"], counts[i] + 1
    return {key: _config(key, ledger, us, counts) for key in dict.fromkeys(c.key for c in ledger.calls)}


def _config(key: str, ledger: Ledger, us: list[float], counts: list[int]) -> dict:
    """One config's counted calls; its last warm-up and counted calls must launch alike."""
    mine = [i for i, c in enumerate(ledger.calls) if c.key == key]
    counted = [i for i in mine if ledger.calls[i].counted]
    warm = [i for i in mine if not ledger.calls[i].counted][-1:]
    seen = {i: counts[i] for i in warm + counted}
    if len(set(seen.values())) > 1:
        shown = ", ".join(f"{'warm-up' if not ledger.calls[i].counted else 'call'} {n}" for i, n in seen.items())
        raise KernelFault(
            f"config {key}: the calls under Nsight Compute launched different numbers of kernels ({shown[:300]}): "
            "a call's launches may not be labelled as another's"
        )
    if not counted or counts[counted[0]] == 0:
        raise KernelFault(
            f"config {key}: Nsight Compute saw no kernel launch in its calls; it times kernels only, so the "
            "work of a call cannot be moved into copies, memsets or the host"
        )
    per = [us[i] for i in counted]
    return {
        "gpu_us": statistics.fmean(per),
        "gpu_ci_pct": median_ci_pct(per) if len(per) >= 6 else None,
        "gpu_launches": counts[counted[0]],
        "calls": [
            {
                "us": round(us[i], 4),
                "seed": ledger.calls[i].seed,
                "set": ledger.calls[i].set,
                "wall_us": round(ledger.calls[i].wall_us, 2),
                "launches": counts[i],
            }
            for i in counted
        ],  # fmt: skip
    }


def second_clocks(rec: dict, clocked: dict) -> None:
    """The in-process clocks (the events' median, torch.profiler's GPU time) against the GPU time
    of the launches: a fault when one shows less than the GPU did (module constants)."""
    floor = (1 - SECOND_CLOCK_TOL) * clocked["gpu_us"] - SECOND_CLOCK_SLACK_US
    for name, v in (("its CUDA events", rec.get("median_us")), ("torch.profiler", rec.get("profiler_us"))):
        if v is not None and v < floor:
            raise KernelFault(
                f"config {rec['key']}: the kernel's process reported times the GPU did not show: {name} "
                f"{v:.2f} us per call, Nsight Compute {clocked['gpu_us']:.2f} us (every launch, recorded outside "
                "that process)"
            )
