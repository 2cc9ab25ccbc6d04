"""The clock that decides, read outside the kernel's process (trusted side).

The CUDA events and torch.profiler's trace are recorded in the kernel's process, which may rewrite
them. The deciding GPU time comes instead from Nsight Compute: a second kernel process runs under
``ncu`` (kopt.profilers.ncu.clock_command: ``gpu__time_duration`` of every launch, one pass, no
cache or clock control), and the ``ncu`` front-end process, which the kernel's process cannot
write to or trace (Landlock), writes the record that the judge parses here once that process and
everything it started have ended.

Every launch counts. The configs run in order of the reference's size, smallest first; each
config's ``clock_calls`` calls (whole cycles of its input pool) are drawn fresh, poisoned and
checked as everywhere, and before each the judge flushes the L2 from its own process (a 256 MB
write: no launch of the kernel's process is the harness's). After each call's answer the judge
orders a marker: one launch of an empty kernel (kopt.inside.marker) over a grid it draws at
random. In the record, a call's window is every launch between the marker before it and its own
(the first window starts at the process's start: nothing is left out). A config's GPU time is
its windows' total over its calls.

The kernel's process learns a marker's grid only after its call has answered, and the next
call's inputs are drawn only after the marker has answered: a call's work lies before its marker
(its outputs are checked at its answer). Launching a marker late moves later work into earlier
windows: within a config that leaves the config's total alone, and across configs it moves work
from a larger config into a smaller one, which makes the smaller one slower by more than it makes
the larger one faster, so no class gains beyond noise without another regressing. A missing,
repeated or out-of-order marker, a launch from another process, or a config with no launch at
all is a fault.

A torch baseline (the reference's own code, trusted, not under test) gets three warm-up calls
first, left out of its figure.

What Nsight Compute does not see (copies, memsets, host work, a process it does not follow, work
after the kernel stops the profiler through the CUDA API) is not in this clock: the judge's own
wall time per call here bounds it (kopt.loop.decide).
"""

from __future__ import annotations

import math
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

BASELINE_WARMUP = 3
# The in-process clocks (events, torch.profiler) may sit above the GPU time of the launches (the
# events bracket the gaps between launches and their own pair's cost), not below it by more than
# this fraction plus SECOND_CLOCK_SLACK_US: less is a time the GPU did not show.
SECOND_CLOCK_TOL = 0.05
SECOND_CLOCK_SLACK_US = 0.5
CLOCK_NAME = "ncu"  # bench.csv's clock column: Nsight Compute, outside the kernel's process
MARKER = "kopt_clock_mark"  # kopt.inside.marker.NAME (the judge does not import kopt.inside)


@dataclass
class Call:
    """One call the judge ordered in the clock's kernel process, and the marker after it."""

    key: str
    grid: int
    counted: bool = True
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
    ``go(proc)`` (the kernel imported); per config, what ``per_config`` reads from the record."""
    with tempfile.TemporaryDirectory(prefix="kopt-clock-", dir=os.environ.get("KOPT_SCRATCH_ROOT")) as tmp:
        csv_path, ledger = Path(tmp) / "ncu_clock.csv", Ledger()
        wrapper = ncu.clock_command(tool, str(csv_path))
        proc = KernelProcess(kernel, wrapper=wrapper, sandbox=sandbox, timeout_s=timeout_s)
        try:
            go(proc)
            run_calls(ref, proc, smallest_first(ref, items), opts=opts, ledger=ledger)
        finally:
            proc.finish()  # no process of the kernel's is left when the record is read
        return per_config(read_record(csv_path), ledger)


def smallest_first(ref, items: list[dict]) -> list[dict]:
    """The configs by the reference's bytes moved (else their element count), smallest first."""
    nbytes = getattr(ref, "bytes_moved", None)

    def size(it: dict) -> float:
        if callable(nbytes):
            try:
                return float(nbytes(**it["config"]))
            except Exception:  # noqa: BLE001 - fall back to the element count
                pass
        nums = [v for v in it["config"].values() if isinstance(v, (int, float)) and not isinstance(v, bool)]
        return float(math.prod(nums))

    return sorted(items, key=size)


def run_calls(ref, proc: KernelProcess, items: list[dict], *, opts: dict, ledger: Ledger) -> None:
    """Every config's calls in ``proc``, each checked and followed by its marker, in ``ledger``."""
    import torch

    from kopt.measure.device import L2_FLUSH_BYTES

    flush = torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device="cuda")
    warm = BASELINE_WARMUP if opts.get("torch_baseline") else 0
    for item in items:
        trial = Trial(
            ref, proc, item, device="cuda", opts={**opts, "flush_l2": False}, phase="clock",
            max_sets=int(opts.get("pool_sets", 8)),
        )  # fmt: skip
        for i in range(warm):
            _one(trial, ledger, f"config {item['key']}, clock warm-up call {i}", flush, counted=False)
        for i in range(whole_cycles(trial, int(opts.get("clock_calls", 30)))):
            _one(trial, ledger, f"config {item['key']}, clocked call {i}", flush)
        del trial


def _one(trial: Trial, ledger: Ledger, where: str, flush, *, counted: bool = True) -> None:
    """One call: drawn, the L2 flushed by the judge, ordered, timed on the judge's clock, checked;
    then its marker."""
    import torch

    s, d = trial.prepare()
    flush.zero_()  # in the judge's own CUDA context: no launch of the kernel's process
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    answer = trial.call(s, where=where, timed=False)
    wall_us = (time.perf_counter() - t0) * 1e6
    trial.check_or_raise(s, d, answer, where)
    call = Call(trial.key, 1 + secrets.randbelow(65535), counted, s.seed, s.index, wall_us)
    trial.proc.ask({"op": "mark", "grid": call.grid})
    ledger.calls.append(call)


def read_record(csv_path: Path) -> list[dict]:
    """The launches Nsight Compute recorded, or a fault when it left no readable record."""
    try:
        return ncu.clock_launches(csv_path.read_text(errors="replace"))
    except (OSError, ValueError) as e:
        raise KernelFault(
            f"Nsight Compute left no readable record of the calls ({e}): the clock that decides is missing"
        ) from None


def windows(launches: list[dict], ledger: Ledger) -> list[list[dict]]:
    """Each ordered call's launches: those between the marker before it and its own (module
    docstring); a fault when the markers are not there once each, in order, or a launch comes from
    another process than theirs."""
    found = [j for j, ln in enumerate(launches) if MARKER in str(ln["kernel"])]
    grids = [_grid(launches[j]["grid"]) for j in found]
    want = [c.grid for c in ledger.calls]
    real = [j for j, g in zip(found, grids, strict=True) if g in set(want)]
    if [_grid(launches[j]["grid"]) for j in real] != want:
        raise KernelFault(
            f"Nsight Compute's record holds the clock's markers out of order, twice or not at all ({len(real)} "
            f"of {len(want)} found in order): the calls' launches cannot be told apart"
        )
    process = launches[real[0]]["process"] if real else None
    if any(ln["process"] != process for ln in launches):
        other = next(ln for ln in launches if ln["process"] != process)
        raise KernelFault(
            f"Nsight Compute saw a launch of {str(other['kernel'])[:80]!r} in another process ({other['process']}) "
            "than the kernel's: every launch of a call must be made in the process that was ordered to make it"
        )
    starts = [0, *[j + 1 for j in real[:-1]]]
    return [launches[a:b] for a, b in zip(starts, real, strict=True)]


def _grid(text) -> int | None:
    """A launch's grid size, ``(g, 1, 1)``, as ``g``; None for any other shape."""
    dims = [int(x) for x in str(text or "").strip("() ").split(",") if x.strip().isdigit()]
    return dims[0] if len(dims) == 3 and dims[1:] == [1, 1] else None


def per_config(launches: list[dict], ledger: Ledger) -> dict[str, dict]:
    """Per config: the GPU time per call (µs: its counted windows' total over their number), the
    launches per call, and each counted call's window."""
    out: dict[str, dict] = {}
    for call, win in zip(ledger.calls, windows(launches, ledger), strict=True):
        if not call.counted:
            continue
        if any(ln["us"] is None for ln in win):
            bad = next(ln for ln in win if ln["us"] is None)
            raise KernelFault(f"Nsight Compute gave no GPU time for a launch of {str(bad['kernel'])[:80]!r}")
        rec = out.setdefault(call.key, {"calls": []})
        us = sum(ln["us"] for ln in win)
        rec["calls"].append(
            {
                "us": round(us, 4),
                "seed": call.seed,
                "set": call.set,
                "wall_us": round(call.wall_us, 2),
                "launches": len(win),
            }
        )
    for key, rec in out.items():
        _summarise(key, rec)
    return out


def _summarise(key: str, rec: dict) -> None:
    per = [c["us"] for c in rec["calls"]]
    if not sum(c["launches"] for c in rec["calls"]):
        raise KernelFault(
            f"config {key}: Nsight Compute saw no kernel launch in its calls; it times kernels only, so the "
            "work of a call cannot be moved into copies, memsets or the host"
        )
    rec["gpu_us"] = sum(per) / len(per)  # the total over the calls: moving work between them leaves it
    rec["gpu_median_us"] = statistics.median(per)
    rec["gpu_ci_pct"] = median_ci_pct(per) if len(per) >= 6 else None  # the median's: how steady the calls are
    rec["gpu_launches"] = sum(c["launches"] for c in rec["calls"]) / len(per)
    rec["wall_us"] = statistics.median(c["wall_us"] for c in rec["calls"])


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
