"""Run one task of a kernel variant in a child process with a time limit.

The child (``python -m kopt.measure.child``) reports progress as JSON lines: ``{"start": label}`` when it
begins a unit of work (one config), ``{"record": {...}}`` when it finishes one, and ``{"phase": name}``
when a task of two phases (correctness, then bench) begins one. The time limit
applies per unit, so a hang is caught after ``timeout_s`` whatever the number of configs, and the
records finished before a crash or hang are kept. The child runs in its own process group, so a
hung kernel's helper processes die with it.

Interrupted is not failed: a child killed from outside (SIGKILL as the OOM killer sends it,
SIGTERM, SIGINT, SIGHUP) raises ``Interrupted``, which fails the job (Snakemake removes its
outputs and a rerun measures again) instead of writing a verdict; the kernel's own crash (SIGSEGV,
SIGBUS, SIGABRT, ...), an exception or a hang stays a ``failed`` verdict. No child outlives its
run: on Ctrl-C or SIGTERM of the job the child's group is killed, the child dies with the job's
process if that is killed (``PR_SET_PDEATHSIG``), and the job stops its child when the Snakemake
process that started it is gone (kill -9 of Snakemake).

A child can be started *held* (``Child(..., held=True)``): it imports torch and then waits for
``go``, which gives it the GPU the gate chose, so its start-up is paid while the gate reads the GPUs
and while another child runs.
A held child touches no device before its go, and leaves when its job is gone.

A fault of the harness, not the kernel (a child that CUDA bound to another GPU than the gate
claimed), is no verdict either: the child exits with ``HARNESS_EXIT`` and ``HarnessError`` fails
the job.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from kopt.measure import reaper, zygote
from kopt.measure.child import KERNEL_TASKS, go_path
from kopt.measure.faults import HARNESS_EXIT
from kopt.workspace.records import ChildEnvelope, checked_request

# signals that come from outside the kernel: the job fails (a rerun retries), no verdict is written
EXTERNAL = {signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
STOPS = {signal.SIGTERM, signal.SIGINT}  # held while a child is closed: its sweep is not cut short


class Interrupted(RuntimeError):
    """The child was stopped from outside: not a verdict on the kernel."""


class HarnessError(RuntimeError):
    """The child found kopt or the machine at fault (kopt.measure.faults.HarnessFault): not a verdict."""


def writable_by_kernels(path: Path) -> str | None:
    """The place every kernel's sandbox lets it write (kopt.inside.sandbox.writable, not imported
    here: the judge never imports the kernel's side) that holds ``path``, or None: /dev (its shared
    memory and device files), the user's KOPT_KERNEL_WRITABLE, every version's caches. The judge's
    own folder must lie in none (a review: with TMPDIR under /dev/shm a kernel forged the judge's
    progress records)."""
    from kopt.measure.boundary import kernel_caches_root

    extra = [x for x in os.environ.get("KOPT_KERNEL_WRITABLE", "").split(os.pathsep) if x]
    at = path.resolve()
    return next((p for p in ["/dev", *extra, str(kernel_caches_root())] if at.is_relative_to(Path(p).resolve())), None)


@dataclass
class ChildOutcome:
    status: str  # "ok" | "raised" | "crashed" | "timeout" | "gate" (no idle GPU: nothing ran)
    result: dict | None = None
    error: str | None = None
    records: list[dict] = field(default_factory=list)
    current: str | None = None  # the unit that was running when the child failed
    device: str | None = None  # the device the child chose, as soon as it said
    log_tail: str = ""
    gate: dict | None = None  # which GPU the gate chose (kopt.loop.gate), or why it passed
    phases: dict[str, int] = field(default_factory=dict)  # phase -> index of its first record
    # seconds after the start at which the child was ready (torch imported, device chosen), began
    # each phase, and ended: where a version's turnaround goes
    timeline: dict[str, float] = field(default_factory=dict)
    env: dict | None = None  # the machine record a phase line carried (kept if a later phase dies)

    @property
    def phase(self) -> str | None:
        """The phase the child was in last (None for a task of one phase)."""
        return next(reversed(self.phases), None)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def _read_progress(path: Path, offset: int, records: list, state: dict) -> int:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            chunk = f.read()
    except FileNotFoundError:
        return offset
    end = chunk.rfind(b"\n") + 1  # only whole lines
    for line in chunk[:end].splitlines():
        try:
            ev = json.loads(line)
        except json.JSONDecodeError:
            continue
        state["last"] = time.monotonic()
        since = round(state["last"] - state["t0"], 2)
        if "device" in ev:
            state["device"] = ev["device"]
            state["timeline"]["ready"] = since
        if "phase" in ev:
            state["phases"][ev["phase"]] = len(records)
            state["timeline"][ev["phase"]] = since
            state["env"] = ev.get("env") or state.get("env")
            state["phase"] = ev["phase"]
        if "start" in ev:
            state["current"] = ev["start"]
            state["timeline"][f"{state.get('phase') or 'start'}: {ev['start']}"] = since
        if "record" in ev:
            records.append(ev["record"])
            state["current"] = None
    return offset + end


def _describe_exit(rc: int) -> str:
    if rc < 0:
        try:
            name = signal.Signals(-rc).name
        except ValueError:
            name = f"signal {-rc}"
        return f"the process was killed by {name}"
    return f"the process exited with code {rc}"


def _snakemake_pid() -> int | None:
    """The Snakemake process this job runs under (an ancestor), if any (Linux /proc)."""
    pid = os.getppid()
    for _ in range(8):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        if b"snakemake" in cmd:
            return pid
        pid = int(stat.rsplit(")", 1)[1].split()[1])
        if pid <= 1:
            return None
    return None


def _alive(pid: int | None) -> bool:
    if pid is None:
        return True
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


class Child:
    """One started child process of ``task``. A ``held`` child imports torch, then waits, touching
    no device, until ``go`` gives it the environment the GPU gate chose: its start-up overlaps the
    gate's readings and another child's work. ``wait`` follows it to its end. Used as a context
    manager: leaving early (Ctrl-C, SIGTERM, an error) kills its process group, held or not."""

    live: set[int] = set()  # the judges of this job still running (never swept)

    def __init__(
        self,
        task: str,
        request: dict,
        *,
        env: dict[str, str] | None = None,
        log_path: str | Path | None = None,
        wrapper: list[str] | None = None,
        held: bool = False,
    ):
        self.task, self.held = task, held
        if wrapper and task in KERNEL_TASKS:  # a profiler wraps the kernel's process, never the judge
            request, wrapper = {**request, "wrapper": wrapper}, None
        reaper.become_subreaper()  # a judge killed here leaves its kernel's processes to this one
        self._tmp = tempfile.TemporaryDirectory(prefix="kopt-")
        tmp = Path(self._tmp.name)
        if place := writable_by_kernels(tmp):
            self._tmp.cleanup()
            raise HarnessError(
                f"kopt: the judge's folder {tmp} lies in {place}, where every kernel's sandbox lets it write "
                "(its request, its result, the kernels' scratch): set TMPDIR to a folder outside it"
            )
        self.req, self.out, self.prog = tmp / "request.json", tmp / "result.json", tmp / "progress.jsonl"
        self.req.write_text(json.dumps(checked_request(task, {**request, "held_by": os.getpid()} if held else request)))
        self.log = Path(log_path) if log_path else tmp / "child.log"
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self.snakemake = _snakemake_pid()  # before the child starts: a Snakemake killed meanwhile is still seen gone
        self._logf = open(self.log, "ab")  # noqa: SIM115 - open for the child's life, closed by close()
        env = {**(env or {}), "KOPT_SCRATCH_ROOT": str(tmp)}  # the kernel's scratch goes with this folder
        self.proc = _start(task, [str(self.req), str(self.out), str(self.prog)], self._logf, env, wrapper)
        self.since = reaper.started(self.proc.pid)
        Child.live.add(self.proc.pid)
        self.t0 = time.monotonic()
        self.went = None if held else self.t0
        # SIGTERM raises Interrupted while the child lives (main thread only); children close in the
        # reverse order of their start (one with-statement), so each puts back the handler it found
        main = threading.current_thread() is threading.main_thread()
        self._old_term = signal.signal(signal.SIGTERM, _raise_terminated) if main else None

    def go(self, env: dict[str, str]) -> None:
        """Release a held child: it sets ``env`` (the GPU binding) and begins its task."""
        part = self.req.with_name("go.part")
        part.write_text(json.dumps({"env": env}))
        part.rename(go_path(self.req))
        self.went = time.monotonic()

    def wait(self, timeout_s: float, startup_timeout_s: float = 300.0) -> ChildOutcome:
        """Follow the released child to its end; never raises for a failing kernel, raises
        ``Interrupted`` when the child or the run is stopped from outside."""
        assert self.went is not None, "a held child waits for its go: call go() first"
        records: list[dict] = []
        state = {"last": self.went, "t0": self.t0, "current": None, "device": None, "phases": {}, "timeline": {}}
        if self.held:
            state["timeline"]["go"] = round(self.went - self.t0, 2)
        rc, timed_out = _watch(self.proc, self.prog, records, state, (timeout_s, startup_timeout_s), self.snakemake)
        Child.live.discard(self.proc.pid)
        # a judge killed here (a hang) leaves its kernel's processes to this one: none outlives it
        reaper.sweep(keep=frozenset(Child.live) | zygote.pids(), since=self.since)
        return _outcome(self.task, rc, timed_out, timeout_s, self.out, records, state, _tail(self.log))

    def close(self) -> None:
        """Kill what is left of the child's group (under a profiler that died, the child itself)
        and every process its kernel's processes left to this one, then drop its files (the log
        stays). A judge killed early (SIGTERM, Ctrl-C, an error here) leaves a profiler wrapping a
        kernel's process: a session of its own, outside the judge's group, whose target dies with
        the profiler, not with the judge; one stuck importing its kernel held the GPU for good
        (H200, docs/runs/h200-clock-handover/)."""
        main = threading.current_thread() is threading.main_thread()
        held = signal.pthread_sigmask(signal.SIG_BLOCK, STOPS) if main else None  # a second Ctrl-C waits
        try:
            _kill_group(self.proc)
            Child.live.discard(self.proc.pid)
            reaper.sweep(keep=frozenset(Child.live) | zygote.pids(), since=self.since)
        finally:
            if self._old_term is not None:
                signal.signal(signal.SIGTERM, self._old_term)
            self._logf.close()
            self._tmp.cleanup()
            if held is not None:
                signal.pthread_sigmask(signal.SIG_SETMASK, held)

    def __enter__(self) -> Child:
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.close()
        return False


def run_child(
    task: str,
    request: dict,
    *,
    timeout_s: float,
    startup_timeout_s: float = 300.0,
    env: dict[str, str] | None = None,
    log_path: str | Path | None = None,
    wrapper: list[str] | None = None,
) -> ChildOutcome:
    """Run ``kopt.measure.child`` ``task`` on ``request``; never raises for a failing kernel, raises
    ``Interrupted`` when the child or the run is stopped from outside.

    ``wrapper`` prefixes the command (a profiler such as ``ncu ...``); its output goes to the log.
    """
    with Child(task, request, env=env, log_path=log_path, wrapper=wrapper) as child:
        return child.wait(timeout_s, startup_timeout_s)


def _start(task: str, paths: list[str], logf, env: dict[str, str] | None, wrapper: list[str] | None):
    """The child process, in its own session (process group), its output to ``logf``; it dies
    with this process (``reaper.die_with_parent``). Forked by this process's zygote where
    ``zygote.wanted`` (no GPU on the machine), else started afresh."""
    child_env = dict(os.environ)
    child_env.update(env or {})
    child_env["PYTHONUNBUFFERED"] = "1"
    if zygote.wanted(wrapper):
        forked = zygote.start_judge([task, *paths], child_env, logf.fileno())
        if forked is not None:
            return forked
    return subprocess.Popen(
        [*(wrapper or []), sys.executable, "-m", "kopt.measure.child", task, *paths],
        stdout=logf,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=child_env,
        start_new_session=True,
        preexec_fn=reaper.die_with_parent,
    )


def _outcome(
    task: str, rc: int | None, timed_out: bool, timeout_s: float, out: Path, records: list, state: dict, tail: str
) -> ChildOutcome:
    """What the finished child's exit, progress and result file say: ``Interrupted`` (raised) when
    it was stopped from outside, else timeout, ok, raised or crashed."""
    cur, dev = state["current"], state["device"]
    timeline = {**state["timeline"], "end": round(time.monotonic() - state["t0"], 2)}
    seen = {"records": records, "device": dev, "log_tail": tail, "phases": state["phases"], "timeline": timeline}
    seen["env"] = state.get("env")
    where = f" while running {cur}" if cur else ""
    # only before the child named its device: after that, a kernel may have run, and exiting so is its crash
    if rc == HARNESS_EXIT and dev is None and (payload := _read_payload(out)) and payload.get("error"):
        raise HarnessError(f"kopt: {payload['error']}; the job fails, no verdict was written")
    if rc is not None and rc < 0 and -rc in EXTERNAL:
        raise Interrupted(
            f"kopt: the judge's process ({task}: kopt.measure.child) was stopped from outside by {signal.Signals(-rc).name}{where} "
            "(the OOM killer, a user or an interrupted run): the job fails so that a rerun measures again; "
            "no verdict was written"
        )
    if timed_out:
        at = f" in {cur}" if cur else " before the first config started"
        error = f"timed out: no progress for {timeout_s:g} s{at}; the process was killed"
        return ChildOutcome("timeout", error=error, current=cur, **seen)
    payload = _read_payload(out)
    if rc == 0 and payload and payload.get("ok"):
        return ChildOutcome("ok", result=payload["result"], **seen)
    if payload and payload.get("error"):
        return ChildOutcome("raised", error=payload["error"], current=cur, **seen)
    last = tail.strip().splitlines()[-1:] if tail.strip() else []
    detail = f" (last output: {last[0][:300]})" if last else ""
    error = f"{_describe_exit(rc)}{where}{detail}"
    return ChildOutcome("crashed", error=error, current=cur, **seen)


def _read_payload(out: Path) -> dict | None:
    """The child's result file, or None when it wrote none or an unreadable one."""
    if not out.is_file():
        return None
    try:
        return ChildEnvelope.model_validate_json(out.read_text()).model_dump()
    except ValidationError:  # not JSON, or not the envelope the child writes
        return None


def _watch(proc, prog: Path, records: list, state: dict, limits: tuple[float, float], snakemake: int | None):
    """Follow the child's progress until it exits (its return code), hangs past the limit (``limits``:
    once started, before) or the Snakemake process ``snakemake`` above this job is gone; returns
    (return code or None, timed out)."""
    timeout_s, startup_timeout_s = limits
    offset = 0
    while True:
        rc = proc.poll()
        offset = _read_progress(prog, offset, records, state)
        if rc is not None:
            return rc, False
        limit = timeout_s if state["current"] or records else startup_timeout_s
        if time.monotonic() - state["last"] > limit:
            _kill_group(proc)
            return None, True
        if not _alive(snakemake):
            _kill_group(proc)
            raise Interrupted(f"kopt: Snakemake (pid {snakemake}) is gone: the kernel process was stopped")
        time.sleep(0.05)


def _raise_terminated(signum, frame):
    raise Interrupted("kopt: the job was terminated (SIGTERM): the kernel process was stopped")


def _kill_group(proc: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _tail(log: Path, n: int = 4000) -> str:
    try:
        data = log.read_bytes()
    except FileNotFoundError:
        return ""
    return data[-n:].decode("utf-8", "replace")


def gate_for(params: dict) -> tuple[dict[str, str], dict] | ChildOutcome:
    """The GPU gate (kopt.loop.gate): the idlest idle GPU claimed for this job, as (environment
    binding a child to it, the gate's record); or the outcome "gate" when none became idle within
    the gate's limit (its error starts with "gate:"), for every child the job would have run.
    With nvidia-smi, ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` makes CUDA number the GPUs as nvidia-smi does,
    and ``KOPT_GPU_UUID`` names the claimed GPU (kopt.measure.device.select_device checks that CUDA
    gave the child that one: a held child sets its binding after importing torch)."""
    from kopt.loop.gate import GateTimeout, acquire

    try:
        env, rec = acquire(params.get("gate"), params.get("device", "auto"))
    except GateTimeout as e:
        return ChildOutcome("gate", error=str(e), gate={"gate": "timeout", "why": str(e)})
    if rec.get("monitor") == "nvidia-smi":  # CUDA numbers GPUs as nvidia-smi does; the child checks it got this one
        env = {**env, "CUDA_DEVICE_ORDER": "PCI_BUS_ID", "KOPT_GPU_UUID": rec["gpu_uuid"]}
    return env, rec


def run_gated(task: str, request: dict, params: dict, **kw) -> ChildOutcome:
    """run_child behind the GPU gate: bound to the idlest idle GPU, or status "gate" when none
    became idle within the gate's limit (the error starts with "gate:")."""
    from kopt.loop.gate import ended

    gate = gate_for(params)
    if isinstance(gate, ChildOutcome):
        return gate
    env, rec = gate
    out = run_child(task, request, env={**(kw.pop("env", None) or {}), **env}, **kw)
    out.gate = ended(rec)
    return out
