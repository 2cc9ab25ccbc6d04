"""The clock that decides, read outside the kernel's process (trusted side).

The CUDA events and torch.profiler's trace are recorded in the kernel's process, which may rewrite
them. The deciding GPU time comes instead from Nsight Compute: each config's calls run again in a
kernel process of their own under ``ncu`` (kopt.profilers.ncu.clock_command: ``gpu__time_duration``
of every launch, one pass, no cache or clock control), and the ``ncu`` front-end process, which
the kernel's process cannot write to or trace (Landlock), writes the record that the judge parses
here once that process and everything it started have ended.

Every launch counts, and the process is the boundary: a config's GPU time is the total of every
launch its process made, over the number of calls it was ordered. Nothing the kernel's process
does moves work out of that total: no label, range or marker of its making is read (an
adversarial review broke a design that cut one process's launches into calls by NVTX labels, and
another that cut them by marker launches: the kernel pushes the labels and launches the markers).
The calls are drawn fresh, poisoned and checked as everywhere, and before each the judge flushes
the L2 from its own CUDA context (a 256 MB write: no launch of the kernel's process is the
harness's). The processes start together with the gate (kopt.measure.child) and make their CUDA
context at once; beside the in-process timing they are begun and import the kernel, the first
alone, then the others at once. Nsight Compute profiles one process at a time, and a process that
has launched holds it until it has left (another's launches fail meanwhile: 'a driver resource
was unavailable', H100): only the first config's process makes a warm-up launch then, before any
code of the kernel's is imported (Nsight Compute's set-up at a process's first launch, 0.63-0.66 s
on the H100, is paid beside the in-process timing; the launch is dropped from the record by
position and name); the others pay it on their first call. The configs' calls run one after another, each process ended
before the next config's calls.

What the total holds besides the calls: what the kernel launches at import or on a first call
(Triton's autotuning is kept on disk per version, TRITON_CACHE_AUTOTUNING, so the timing process's
choice is reused). A torch baseline (the reference's own code, trusted, not under test) gets
BASELINE_WARMUP calls first, and Nsight Compute times only the launches inside the NVTX range of
its counted calls (torch.compile's first calls compile and record graphs). What it lacks: what
Nsight Compute does not see (copies, memsets, host work, a process it does not follow); the
kernel's cudaProfilerStop is ignored (kopt.profilers.ncu.IGNORE_STOP: on the H100 it hid launches
from the clock until then); the judge's own clock around batches of back-to-back calls in the
timing process bounds that (kopt.measure.bound, kopt.loop.decide), not these calls: here each
launch holds 5-7 ms of Nsight Compute's own work. Here the judge reads the process's CPU time per
call (host work shows in it: where the time went) and watches its whole tree for another process
holding the GPU (kopt.measure.watch), which fails the version.

The processes not yet begun wait, confined (kopt.inside.confined, before their Python started) but
with no kernel imported, for their first order; each must be confined as the timing process was.
No kernel process can trace another or the judge (Landlock), nor signal a process outside its own
sandbox where Landlock scopes signals (ABI 6+; Nsight Compute profiles a process so scoped, H100:
docs/runs/h100-clock/); where it does not, one config's kernel can kill another config's process,
or its ncu: that fails the version, and a kernel can only fail itself so."""

from __future__ import annotations

import os
import shutil
import statistics
import sys
import tempfile
import threading
from pathlib import Path

from kopt.measure import watch
from kopt.measure.boundary import KernelProcess
from kopt.measure.faults import HarnessFault, KernelFault
from kopt.measure.timing import whole_cycles
from kopt.measure.trial import Trial
from kopt.profilers import ncu

# The in-process clocks (events, torch.profiler) may sit above the GPU time of the launches (the
# events bracket the gaps between launches and their own pair's cost), not below it by more than
# this fraction, plus SECOND_CLOCK_SLACK_US, plus SECOND_CLOCK_LAUNCH_US per launch: less is a time
# the GPU did not show. Nsight Compute's gpu__time_duration of a short launch reads about 1.4 us
# over torch.profiler's (CUPTI's) time of it: 2.96 against 1.57 us per call of the tiny softmax's
# one launch on the H100 (docs/runs/h100-clock/); on a 450 us launch it reads 3% under the events.
SECOND_CLOCK_TOL = 0.05
SECOND_CLOCK_SLACK_US = 0.5
SECOND_CLOCK_LAUNCH_US = 2.0
CLOCK_NAME = "ncu"  # bench.csv's clock column: Nsight Compute, outside the kernel's process
BASELINE_WARMUP = 3
BASELINE_RANGE = "kopt-clock"  # a trusted baseline's counted calls (ncu --nvtx-include), and the warm-up
WARMUP_KERNEL = "FillFunctor"  # the warm-up launch's kernel (torch.ones), first in every record
# input sets of a clock process's pool at most: its calls are whole cycles of it (clock_calls rounded
# up), and each costs 6-8 ms of Nsight Compute's own on the H100; the timing process's pool is larger
# for the bound's batches (kopt.measure.bound)
CLOCK_SETS = 8


class ClockProcesses:
    """One kernel process per config under Nsight Compute (``tool``), started together as soon as
    the GPU is bound: torch's import and the CUDA context overlap the gate (kopt.inside.serve). Once
    the gate has passed, ``warm_up`` begins them beside the in-process timing, the first with one
    warm-up launch (Nsight Compute's set-up at a first launch, 0.6 s, paid then: the module's
    docstring says why the first alone), then the others at once, and each imports the kernel. A
    process whose warm-up fails is started again and is begun in its turn."""

    def __init__(self, kernel: str, items: list[dict], *, tool: str, baseline: bool, sandbox: bool, timeout_s: float):
        self.kernel, self.tool, self.sandbox, self.timeout_s = kernel, tool, sandbox, timeout_s
        self.only = BASELINE_RANGE if baseline else None
        self.tmp = tempfile.mkdtemp(prefix="kopt-clock-", dir=os.environ.get("KOPT_SCRATCH_ROOT"))
        self.csvs = [Path(self.tmp) / f"ncu_clock_{i}.csv" for i in range(len(items))]
        self.procs = [self._start(c) for c in self.csvs]
        self.warmed = [False] * len(items)  # made its warm-up launch (the first process only)
        self.gone = [False] * len(items)  # begun and the kernel imported
        self.stopped, self.thread = False, None

    def _start(self, csv_path: Path) -> KernelProcess:
        return KernelProcess(
            self.kernel,
            wrapper=ncu.clock_command(self.tool, str(csv_path), self.only),
            sandbox=self.sandbox,
            timeout_s=self.timeout_s,
            begin=False,
            env={"KOPT_CLOCK_CONTEXT": "1"},
        )

    def warm_up(self, go) -> None:
        """Begin the processes in a thread: the first with its warm-up launch, then the others at once,
        each made ready by ``go(proc)`` (the kernel imported; an import that launches fails while the
        first process holds Nsight Compute, and its process is started again, to import in its turn)."""
        self.thread = threading.Thread(target=self._warm_all, args=(go,), name="kopt-clock-warm-up", daemon=True)
        self.thread.start()

    def _warm_all(self, go) -> None:
        self._warm_one(0, go)
        others = [threading.Thread(target=self._warm_one, args=(i, go), daemon=True) for i in range(1, len(self.procs))]
        for t in others:
            t.start()
        for t in others:
            t.join()

    def _warm_one(self, i: int, go) -> None:
        if self.stopped:
            return
        proc = self.procs[i]
        try:
            proc.begin(**({"warm_up": BASELINE_RANGE} if i == 0 else {}))
            self.warmed[i] = i == 0
            go(proc)
            self.gone[i] = True
        except Exception as e:  # noqa: BLE001 - this thread's failures are the process's, started again
            if self.stopped:
                return
            proc.end(grace_s=10.0, keep=proc.others())
            print(
                f"kopt: a clock process's warm-up failed ({e}{_ncu_says(self.csvs[i])}); started again",
                file=sys.stderr,
            )
            self.warmed[i] = False
            self.csvs[i] = self.csvs[i].with_name(f"ncu_clock_{i}_again.csv")
            if not self.stopped:
                self.procs[i] = self._start(self.csvs[i])

    def ready(self) -> None:
        """Every process begun (or started again, to be begun in its turn)."""
        if self.thread is not None:
            self.thread.join()

    def end(self) -> None:
        self.stopped = True
        for proc in self.procs:
            proc.end(keep=proc.others())
        self.ready()
        for proc in self.procs:  # one started again meanwhile
            proc.end(keep=proc.others())
        shutil.rmtree(self.tmp, ignore_errors=True)


def clocked_configs(
    ref, clock: ClockProcesses, items: list[dict], *, opts: dict, go, mark, confined_as: str | None = None
) -> dict[str, dict]:
    """Each config's calls in its own process of ``clock``, made ready by ``go(proc)`` (the kernel
    imported), one config after another, each process ended (its record written) before the next
    config's calls. Per config, what ``per_config`` reads from its record. ``mark(name)``: the
    timeline's marks (where the clock's time goes). ``confined_as``: the timing process's sandbox
    line, which each clock process's must match (``confined_as_the_timing_process``)."""
    calls: dict[str, list[dict]] = {}
    home = tool_home(clock.tool)  # Nsight Compute's own programs, found once, before any kernel's code runs
    clock.ready()
    try:
        for i, item in enumerate(items):
            proc, csv_path = clock.procs[i], clock.csvs[i]
            mark(f"clock {item['key']}")
            try:
                if not clock.gone[i]:
                    proc.begin()
                    go(proc)
                confined_as_the_timing_process(proc.sandbox, confined_as, item["key"])
                # the kernel processes the judge started and the profilers wrapping them: what may hold the GPU
                known = {p.proc.pid for p in clock.procs} | {p.target for p in clock.procs if p.target}
                calls[item["key"]] = run_calls(ref, proc, item, opts={**opts, "kernel_pids": known,
                                                                      "tool_dir": home}, mark=mark)  # fmt: skip
            except KernelFault as e:
                proc.end(grace_s=10.0, keep=proc.others())
                _keep_record(csv_path, item["key"])
                raise KernelFault(f"{e}{_ncu_says(csv_path)}") from None
            # gone, and all it started, before the next profiles: a process Nsight Compute still
            # holds makes the next one's launches fail ('a driver resource was unavailable', H100)
            mark(f"clock {item['key']}: leave")
            proc.finish(keep=proc.others())
            if not proc.left:  # killed at the end of its grace: its record may be cut short
                raise KernelFault(
                    f"config {item['key']}: Nsight Compute had not finished its record when the grace after "
                    "the process's leave ran out; it was killed and its record is not read"
                )
        mark("clock records")
        out = {}
        for i, item in enumerate(items):
            _keep_record(clock.csvs[i], item["key"])
            launches = read_record(clock.csvs[i], warmed=clock.warmed[i])
            out[item["key"]] = per_config(launches, calls[item["key"]], item["key"])
        return out
    finally:
        clock.end()


def confined_as_the_timing_process(line: str | None, timing_line: str | None, key: str) -> None:
    """A clock process whose sandbox is weaker than the timing process's (not applied, or with
    threads left as they were) could rewrite the record of the clock that decides: a fault of the
    harness's (the kernel's process is confined before its Python starts, kopt.inside.confined), so
    no clock figure comes from it; so is one whose unix socket paths were left reachable where the
    timing process's were hidden (kopt.inside.socket_paths), or with a syscall filter or capabilities
    the timing process had not (kopt.inside.syscall_filter, kopt.inside.capabilities). Where
    Landlock confines nothing, neither process is confined."""
    line, timing_line = line or "", timing_line or ""
    less = _gaps(line) - _gaps(timing_line)
    if timing_line.startswith("landlock") and (not line.startswith("landlock") or "NOT the" in line or less):
        raise HarnessFault(
            f"config {key}: the clock's process was not confined as the timing process was ({line[:300]}): "
            "its record would be the kernel's to rewrite, and is not read"
        )


def _gaps(line: str) -> set[str]:
    """What a sandbox line says it left open, of what the sandbox may leave open where it cannot."""
    said = {gap for gap in ("NOT hidden", "NO syscall filter", "capabilities NOT", "capabilities kept") if gap in line}
    return said | ({"connect allowed"} if "no connect" not in line else set())


def _ncu_says(csv_path: Path) -> str:
    """Nsight Compute's own error and warning lines in its record, as a clause ('' when none)."""
    try:
        lines = csv_path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    said = [ln.strip() for ln in lines if ln.startswith(("==ERROR==", "==WARNING=="))]
    return f" (Nsight Compute: {' '.join(said)[:400]})" if said else ""


def _keep_record(csv_path: Path, key: str) -> None:
    """A copy of the record in ``$KOPT_CLOCK_RECORDS`` when set (evidence runs, fixtures)."""
    from kopt.measure.profiled import re_safe

    keep = os.environ.get("KOPT_CLOCK_RECORDS")
    if keep and csv_path.is_file():
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(csv_path, Path(keep) / f"ncu_clock.{re_safe(key)}.csv")


def run_calls(ref, proc: KernelProcess, item: dict, *, opts: dict, mark=lambda name: None) -> list[dict]:
    """The config's ``clock_calls`` calls (whole cycles of its input pool) in ``proc``, each drawn
    fresh, the L2 flushed by the judge, timed on the judge's clock, checked; their seeds and times."""
    trial = Trial(
        ref, proc, item, device="cuda", opts={**opts, "flush_l2": False}, phase="clock",
        max_sets=min(int(opts.get("pool_sets", 8)), CLOCK_SETS),
    )  # fmt: skip
    baseline = bool(opts.get("torch_baseline"))
    for i in range(BASELINE_WARMUP if baseline else 0):
        trial.judged(f"config {item['key']}, clock warm-up call {i}")
    how = {"nvtx": [BASELINE_RANGE]} if baseline else {}
    how["reset_l2"] = True  # the persisting-L2 carve-out, reset before every call (kopt.inside.l2)
    n = whole_cycles(trial, int(opts.get("clock_calls", 16)))
    mark(f"clock {item['key']}: first call")
    targets = [proc.target] if proc.target else []
    holders = watch.GpuHolders(os.getpid(), set(opts.get("kernel_pids") or ()), opts.get("tool_dir"), targets)
    try:
        with holders:
            out = [trial.judged(f"config {item['key']}, clocked call 0", **how)]
            mark(f"clock {item['key']}: calls")
            cpu0 = watch.cpu_seconds(proc.target) if proc.target else None
            out += [trial.judged(f"config {item['key']}, clocked call {i}", **how) for i in range(1, n)]
    except KernelFault:
        _fail_if_held(holders, item["key"])  # the helper is the cause of what failed (its outputs, its time)
        raise
    _fail_if_held(holders, item["key"])
    if cpu0 is not None and n > 1:  # the calls after the first: host work shows here
        out[1]["cpu_us_per_call"] = (watch.cpu_seconds(proc.target) - cpu0) * 1e6 / (n - 1)
    return out


def _fail_if_held(holders: watch.GpuHolders, key: str) -> None:
    if holders.found:
        pid, cmd = next(iter(holders.found.items()))
        raise KernelFault(
            f"config {key}: process {pid} ({cmd}), started by a kernel's process, held the GPU during "
            "the clock's calls: Nsight Compute does not time its work"
        )


def tool_home(tool: str) -> str | None:
    """The Nsight Compute installation the judge runs (its programs may hold the GPU beside the
    target): the folder of the ``ncu`` it starts, found by the judge before any kernel runs, where
    that folder is an Nsight Compute one (``nsight-compute`` in its path, any case); else None,
    and nothing is left out. Not the folder of the wrapper's own program: ``ncu`` is a shell
    script, and /usr/bin, where sh lies, held the kernel's Python helper too (H100, issue 42)."""
    found = shutil.which(tool) or tool
    home = os.path.dirname(os.path.realpath(found))
    return home if "nsight-compute" in home.lower() else None


def read_record(csv_path: Path, warmed: bool = True) -> list[dict]:
    """The launches Nsight Compute recorded, after the process's warm-up launch when it made one
    (``warmed``: the first, ordered before any code of the kernel's was imported), or a fault when
    it left no readable record or its first launch is not that warm-up."""
    try:
        launches = ncu.clock_launches(csv_path.read_text(errors="replace"))
    except (OSError, ValueError) as e:
        raise KernelFault(
            f"Nsight Compute left no readable record of the calls ({e}): the clock that decides is missing"
        ) from None
    if not warmed:
        return launches
    if not launches or WARMUP_KERNEL not in str(launches[0]["kernel"]):
        raise KernelFault(
            "Nsight Compute's record does not start with the clock's warm-up launch: the process launched "
            "before it was ordered to"
        )
    return launches[1:]


def per_config(launches: list[dict], calls: list[dict], key: str) -> dict:
    """A config's GPU time per call (µs): every launch of its process, over its calls; the launches
    per call and the judge's wall time per call (the median). A fault when a launch has no time,
    comes from another process than the others, or there is none."""
    if not launches:
        raise KernelFault(
            f"config {key}: Nsight Compute saw no kernel launch in its calls; it times kernels only, so the "
            "work of a call cannot be moved into copies, memsets or the host"
        )
    processes = {ln["process"] for ln in launches}
    if len(processes) > 1:
        raise KernelFault(
            f"config {key}: Nsight Compute saw launches in {len(processes)} processes: every launch of a call "
            "must be made in the process that was ordered to make it"
        )
    if any(ln["us"] is None for ln in launches):
        bad = next(ln for ln in launches if ln["us"] is None)
        raise KernelFault(f"config {key}: Nsight Compute gave no GPU time for a launch of {str(bad['kernel'])[:80]!r}")
    n = len(calls)
    return {
        "gpu_us": sum(ln["us"] for ln in launches) / n,
        "gpu_se_us": standard_error(launches, n),
        "gpu_launches": len(launches) / n,
        "wall_us": statistics.median(c["wall_us"] for c in calls),
        "cpu_us": next((c["cpu_us_per_call"] for c in calls if "cpu_us_per_call" in c), None),
        "calls": calls,
    }


def standard_error(launches: list[dict], n: int) -> float | None:
    """The standard error (µs) of the GPU time per call: the spread of the calls' own totals over
    sqrt(n). The launches are cut into calls by count alone (the record's order, the same number
    each), so only where every call made as many: otherwise (a first call's extra launches) None,
    and the fold's noise rule stands alone. On the H100 an honest 48 µs softmax's launches spread
    1.5% (sd), so 8 calls read 0.5% apart between processes: beyond the 1% rule for two versions
    (kopt.loop.decide.class_noise)."""
    if n < 2 or len(launches) % n:
        return None
    k = len(launches) // n
    totals = [sum(ln["us"] for ln in launches[i * k : (i + 1) * k]) for i in range(n)]
    return statistics.stdev(totals) / n**0.5


def second_clocks(rec: dict, clocked: dict) -> None:
    """The in-process clocks (the events' median, torch.profiler's GPU time) against the GPU time
    of the launches: a fault when one shows less than the GPU did (module constants)."""
    slack = SECOND_CLOCK_SLACK_US + SECOND_CLOCK_LAUNCH_US * clocked["gpu_launches"]
    floor = (1 - SECOND_CLOCK_TOL) * clocked["gpu_us"] - slack
    for name, v in (("its CUDA events", rec.get("median_us")), ("torch.profiler", rec.get("profiler_us"))):
        if v is not None and v < floor:
            raise KernelFault(
                f"config {rec['key']}: the kernel's process reported times the GPU did not show: {name} "
                f"{v:.2f} us per call, Nsight Compute {clocked['gpu_us']:.2f} us (every launch, recorded outside "
                "that process)"
            )
