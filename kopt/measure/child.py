"""The judge: ``python -m kopt.measure.child TASK request.json result.json progress.jsonl``.

Trusted: it never imports the kernel's module and never runs its code. For a version it starts
the kernel's own process (kopt.measure.boundary -> kopt.inside), owns every buffer the kernel
gets (kopt.measure.arena), orders each call, checks each call's outputs from its own memory,
computes the statistics, and, once every process of the kernel's is dead, writes
``{"ok": true, "result": ...}`` or ``{"ok": false, "error": "..."}``. It runs the correctness
check and then (when every config passed) the benchmark of one version over its configs, or
another task (ref.py alone, the hardware's ceilings: no kernel there).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
import traceback
from pathlib import Path

from kopt.measure.faults import HARNESS_EXIT, HarnessFault, KernelFault


class Progress:
    """The child's steps, as JSON lines its parent follows (the timeline, the hang limit) and as one
    line each in the job's log (``[  12.3 s] config N=4096: reference()``), so a long step shows
    where it is while it runs."""

    def __init__(self, path: str):
        self.f = open(path, "a", buffering=1)  # noqa: SIM115 - open for the child's life
        self.t0 = time.monotonic()

    def device(self, device: str) -> None:
        self.f.write(json.dumps({"device": device}) + "\n")

    def start(self, label: str) -> None:
        self.f.write(json.dumps({"start": label}) + "\n")
        print(f"[{time.monotonic() - self.t0:7.1f} s] {label}", file=sys.stderr, flush=True)

    def record(self, rec: dict) -> None:
        self.f.write(json.dumps({"record": rec}) + "\n")

    def phase(self, name: str, env: dict | None = None) -> None:
        """The records after this line belong to ``name`` (correctness, then bench); ``env``: the
        machine record, kept by the parent even if this phase dies."""
        self.f.write(json.dumps({"phase": name, "env": env}) + "\n")


KERNEL_TASKS = ("correctness", "bench", "check_then_time", "profile")


def _start_kernel(task: str, req: dict, spare=None):
    """The kernel's process, started before the judge's hold so its start-up overlaps the gate
    (``spare``: forked already, kopt.measure.spare)."""
    from kopt.measure.boundary import KernelProcess

    if task not in KERNEL_TASKS:
        return None
    wrapper = req.get("wrapper") or None
    return KernelProcess(
        req["kernel"], wrapper=wrapper, sandbox=req.get("sandbox", True), timeout_s=req.get("call_timeout_s", 600),
        spare=spare, env={"TRITON_INTERPRET": "1" if _interpreted(req["device"]) else "0"},
    )  # fmt: skip


def _interpreted(device: str) -> bool:
    """Whether the kernel's process runs Triton's interpreter, told in its environment from its start:
    Triton's own ``@triton.jit`` functions (``tl.max``, ``tl.sum``...) are made when Triton is first
    imported, interpreted only if TRITON_INTERPRET is set by then, and a GPU build of torch has the
    process import Triton before it is told its device (kopt.inside.serve._triton_key). ``auto``
    is the CPU where no GPU device file exists (without one torch finds no GPU, on Linux); where one
    exists and torch still sees no GPU, the kernel's process says to ask for device=cpu. A user's own
    TRITON_INTERPRET is not passed on: the device decides."""
    from kopt.measure import spare

    linux = sys.platform.startswith("linux")
    return device == "cpu" or (device == "auto" and linux and not spare.gpu_device_files())


def _spare(task: str):
    """On a machine without a GPU, the kernel's process forked now, before the request is read
    (kopt.measure.spare): torch imported once for both."""
    from kopt.measure import spare

    return spare.fork() if task in KERNEL_TASKS and spare.wanted() else None


def _prepare(req: dict, progress: Progress, proc):
    """Choose the device, load ref.py (trusted), then have the kernel's process import the kernel."""
    from kopt.formats import set_tf32
    from kopt.measure import device as harness
    from kopt.measure import variants

    device = harness.select_device(req["device"])
    progress.device(device)
    set_tf32(False)  # the judge's own float32 references (the bound's checks, a float32 fallback)
    ref = variants.load_reference(req["ref"])
    _go(req, device, proc)
    return device, ref, proc


def _go(req: dict, device: str, proc) -> None:
    """The kernel's process told its device and binding, and to import the kernel."""
    env = {k: os.environ[k] for k in ("CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "KOPT_GPU_UUID") if k in os.environ}
    proc.where = f"{req['kernel']}: import"
    answer = proc.ask(
        {
            "op": "go",
            "env": env,
            "device": device,
            "kernel": req["kernel"],
            "ref": req["ref"],
            "builds": req.get("builds"),
            "tf32": bool(req.get("tf32", False)),
        }
    )
    # torch's TF32 switches as set for the kernel and as its process read them after importing it
    # (its own word, a tripwire: the gate's tolerance is what catches a version that turns them on)
    proc.precision = {"tf32_allowed": bool(req.get("tf32", False)), "reported": _switches(answer.get("tf32"))}
    proc.where = None


def _switches(said) -> dict | None:
    """The kernel's process's word on its TF32 switches, kept to what was asked: two booleans and a
    short precision name (anything else it answers is not recorded)."""
    if not isinstance(said, dict):
        return None
    out = {k: said[k] for k in ("matmul", "cudnn") if isinstance(said.get(k), bool)}
    precision = said.get("float32_matmul_precision")
    if isinstance(precision, str) and precision in ("highest", "high", "medium"):
        out["float32_matmul_precision"] = precision
    return out


def _opts(req: dict) -> dict:
    """Timing options and the inputs' settings (seed, pool, reference memory), as one mapping, and
    whether the kernel is a torch baseline: the request says so, not the kernel (which could claim it)."""
    return {
        **(req.get("opts") or {}),
        **(req.get("inputs") or {}),
        "torch_baseline": req["kernel"].startswith("torch:"),
    }


def _per_config(req: dict, progress: Progress, run, prepared, env: dict | None = None) -> dict:
    """Run ``run(ref, proc, item, device)`` on every config of the chosen device (``prepared``: the
    (device, ref, kernel process); ``env``: an earlier phase's machine record: one process, one
    record, not a second reading of the clocks)."""
    from kopt.measure.environment import environment

    device, ref, proc = prepared
    out = {"device": device, "env": env or environment(device), "sandbox": proc.sandbox, "configs": []}
    out["precision"] = proc.precision
    for item in req["configs_by_device"][device]:
        progress.start(f"config {item['key']}")
        rec = run(ref, proc, item, device)
        progress.record(rec)
        out["configs"].append(rec)
    out["notes"] = list(proc.notes)  # the kernel's process's word on how the interpreter ran it
    return out


def _check(req: dict):
    from kopt.measure.correctness import check_config

    return lambda ref, proc, it, device: check_config(ref, proc, it, seeds=req["seeds"], device=device, opts=_opts(req))


def _time(req: dict, progress: Progress | None = None):
    """Each config's timing; ``progress``: its steps marked in the timeline (where the time goes)."""
    from kopt.measure.timing import bench_config

    def mark(key: str):
        return (lambda step: progress.start(f"config {key}: {step}")) if progress else None

    return lambda ref, proc, it, device: bench_config(
        ref, proc, it, device=device, opts=_opts(req), mark=mark(it["key"])
    )


def task_correctness(req: dict, progress: Progress, proc) -> dict:
    return _per_config(req, progress, _check(req), _prepare(req, progress, proc))


def task_bench(req: dict, progress: Progress, proc) -> dict:
    return _per_config(req, progress, _time(req), _prepare(req, progress, proc))


def task_check_then_time(req: dict, progress: Progress, proc) -> dict:
    """The correctness gate on every config, then, only when every config passed, the benchmark,
    in this one process: ``{"correctness": <task_correctness's result>, "bench": <task_bench's> or
    None}``. The benchmark checks every timed call's outputs again on fresh inputs, so a kernel
    that is right only while checked still fails. On a GPU with ``req["clock"]``, the clock that
    decides follows (``_clock``); its processes start with the gate."""
    prepared = _prepare(req, progress, proc)
    clock = _clock_processes(req, prepared[0])
    stats = None
    if prepared[0] == "cuda":  # the bound's statistics, imported while the gate runs
        from kopt.measure import bound

        stats = bound.preload()
    try:
        progress.phase("correctness")
        checked = _per_config(req, progress, _check(req), prepared)
        if not all(r.get("ok") for r in checked["configs"]):
            return {"correctness": checked, "bench": None}
        if stats is not None:  # a thread of the judge's that holds its GIL, never beside a timed batch
            stats.join()
        progress.phase("bench", checked["env"])
        if clock:
            clock.warm_up(go=lambda p: _go(req, prepared[0], p))
        baseline = req["kernel"].startswith("torch:")
        time_it = _time({**req, "opts": _second_clock_opts(req["opts"], baseline)} if clock else req, progress)
        bench = _per_config(req, progress, time_it, prepared, checked["env"])
        if clock:
            progress.phase("clock")  # then "clock <config>" per config, "clock records" (the timeline)
            _clock(req, prepared, bench, clock, progress)
        out = {"correctness": checked, "bench": bench}
        if req.get("profile") and prepared[0] == "cpu":
            out["profile"] = _profile_here(req, progress, prepared, bench)
        return out
    finally:
        if clock:
            clock.end()


def _profile_here(req: dict, progress: Progress, prepared, bench: dict) -> dict:
    """On the CPU, the profile (the Triton interpreter's wall time per class: no profiler, no GPU)
    in this kernel process, after the bench, from the bench's own timed calls (``bench``): a profile
    child would import torch and triton twice more (a judge and a kernel process) to time the same
    interpreter again, 5-6 s of CPU a version, and calls of its own here 1.7 s more. ``{"ok": True,
    "result": <task_profile's>}`` or the fault that ended it: a failure here is the profile's, never
    the gate's or the bench's. Off the CPU the profile has a child of its own, which a profiler may
    wrap (kopt.steps.profile); rule `profile` writes this one from bench.json."""
    progress.phase("profile")  # (kopt.steps.bench.phases: the bench had ended by then)
    timed = {c["key"]: c["samples"] for c in bench["configs"] if c.get("samples")}
    try:
        return {"ok": True, "result": _profile({**req, **req["profile"]}, _Marks(progress), prepared, timed)}
    except KernelFault as e:
        return {"ok": False, "error": str(e)}


class _Marks(Progress):
    """A progress that only marks the timeline: the profile's steps inside another task's phase,
    its records none of that task's."""

    def __init__(self, progress: Progress):
        self.f, self.t0 = progress.f, progress.t0

    def phase(self, name: str, env: dict | None = None) -> None:
        self.start(name)

    def record(self, rec: dict) -> None:
        pass


def _clock_processes(req: dict, device: str):
    """The deciding clock's kernel processes (kopt.measure.outside_clock), one per config, started
    now (the GPU is bound) so that their start-up overlaps the gate and the in-process timing; None
    without ``req["clock"]`` or off the GPU."""
    if not req.get("clock") or device != "cuda":
        return None
    from kopt.measure import outside_clock as oc

    return oc.ClockProcesses(
        req["kernel"], req["configs_by_device"]["cuda"], tool=req["clock"], baseline=req["kernel"].startswith("torch:"),
        sandbox=req.get("sandbox", True), timeout_s=req.get("call_timeout_s", 600),
    )  # fmt: skip


def _second_clock_opts(opts: dict, baseline: bool) -> dict:
    """Where Nsight Compute's clock decides, the CUDA events are the in-process clock, held to it
    within 5% (kopt.measure.outside_clock.second_clocks): their least sample count does, and only
    the first of their timed calls is checked (the clock's calls and the bound's batches all are: an
    in-process call that skipped work could only read less than the GPU showed, which fails).
    torch.profiler's in-process trace is not taken for a kernel under test: Nsight Compute counts
    every launch on every stream, which the trace's hidden-stream check was for, and the trace's
    first session in a process cost 4.8-6.2 s of one version's 34-36 s on the H100
    (docs/runs/h100-clock/12-marks/); a torch baseline keeps it (its figures stand where the clock
    cannot time it)."""
    return {
        **opts, "max_samples": opts["min_samples"], "profile_calls": opts.get("min_profile_calls", 16),
        "check_timed": False, "in_process_profiler": baseline,
    }  # fmt: skip


def _clock(req: dict, prepared, bench: dict, clock, progress: Progress) -> None:
    """The clock that decides (kopt.measure.outside_clock): once the first kernel process has ended,
    each config's calls run again in a kernel process of its own under Nsight Compute; each bench
    record gets the GPU time of its process's launches per call, and the in-process clocks are held
    to it. A torch baseline (the reference's own code, not under test) keeps its in-process figures
    when the clock cannot time it (a copy is no kernel)."""
    from kopt.measure import outside_clock as oc
    from kopt.measure.trial import release_arena

    device, ref, first = prepared
    clock.ready()
    with contextlib.suppress(KernelFault):  # a process that does not let go only keeps its arena held
        release_arena(first, device)  # its arena freed for the clock's pools
    first.end(keep=first.others())  # and what it started, not the clock's processes
    baseline = req["kernel"].startswith("torch:")
    try:
        clocked = oc.clocked_configs(
            ref, clock, req["configs_by_device"]["cuda"], opts=_opts(req), go=lambda proc: _go(req, device, proc),
            mark=progress.phase, confined_as=first.sandbox,
        )  # fmt: skip
    except KernelFault as e:
        if not baseline:
            raise
        for rec in bench["configs"]:
            rec["clock_note"] = f"{e}; the in-process figures stand (a torch baseline)"
        return
    for rec in bench["configs"]:
        got = clocked[rec["key"]]
        # the bound on unseen work stays the timing process's batches (kopt.measure.bound): under ncu a call's
        # wall time holds about 5-7 ms of Nsight Compute's own work per launch (H100); its wall and CPU time
        # per call are kept to say where time went (kopt.loop.decide)
        rec.update(
            clock=oc.CLOCK_NAME, gpu_us=got["gpu_us"], gpu_se_us=got["gpu_se_us"], gpu_launches=got["gpu_launches"]
        )
        rec.update(clock_wall_us=got["wall_us"], clock_cpu_us=got["cpu_us"], clock_calls=got["calls"])
        rec["gpu_calls"] = len(got["calls"])
        if not baseline:
            oc.second_clocks(rec, got)


def task_profile(req: dict, progress: Progress, proc) -> dict:
    """Every class of a version in one kernel process: its largest config, profiled by torch.profiler
    or, when ``req["tool"]`` names a profiler wrapping that process, by NVTX-ranged calls."""
    return _profile(req, progress, _prepare(req, progress, proc))


def _profile(req: dict, progress: Progress, prepared, timed: dict[str, dict] | None = None) -> dict:
    """task_profile's work on a kernel process that has imported the kernel (``prepared``); on the
    CPU, given the bench's timed calls per config (``timed``), each class's figures are its
    config's, and no call is made (a config without them is called again)."""
    from kopt.measure.boundary import copy_report
    from kopt.measure.environment import environment
    from kopt.measure.profiled import interpreted_class, largest_per_class, profile_class, ranged_calls

    device, ref, proc = prepared
    progress.start("environment")  # the timeline: the kernel imported by now
    raw = Path(req["raw_dir"])
    raw.mkdir(parents=True, exist_ok=True)
    items = largest_per_class(ref, req["configs_by_device"][device])
    ranged = bool(req.get("tool")) and device == "cuda"
    out = {"device": device, "env": environment(device), "classes": [], "tool": req.get("tool") if ranged else None}
    names = [] if ranged or device == "cuda" else [str(n) for n in proc.ask({"op": "metadata"}).get("jit_names") or []]
    for item in items:
        progress.phase(f"class {item['class']}")  # the timeline says where a profile's time goes
        progress.start(f"config {item['key']}")
        if ranged:
            rec = ranged_calls(ref, proc, item, device, opts=_opts(req))
        elif device == "cpu" and item["key"] in (timed or {}):
            calls = timed[item["key"]]
            rec = interpreted_class(item, [c["us"] for c in calls], [c["seed"] for c in calls], names)
        else:
            rec = profile_class(
                ref, proc, item, device, raw, opts=_opts(req), calls=int(req.get("calls", 5)), jit_names=names
            )
        progress.record({"key": item["key"], "class": item["class"]})
        out["classes"].append(rec)
    progress.phase("metadata")
    asm = proc.scratch_file("asm") if device == "cuda" else None
    out["triton"] = proc.ask({"op": "metadata", "asm_dir": str(asm) if asm else None}).get("triton") or []
    if asm is not None and asm.is_dir():  # the kernel process's own files, copied as its report
        for f in sorted(asm.iterdir())[:200]:
            with contextlib.suppress(KernelFault):
                copy_report(f, Path(req["asm_dir"]) / f.name, limit_bytes=64 << 20)
    return out


def task_reference(req: dict, progress: Progress) -> dict:
    """ref.py alone, before any version: it imports, defines setup() and reference(), and both run
    on every config of the chosen device (one probe each, and a check that setup's inputs follow its
    seed). A fault names the function and config."""
    import secrets

    from kopt.measure import device as harness
    from kopt.measure import reference, variants

    device = harness.select_device(req["device"])
    progress.device(device)
    ref = variants.load_reference(req["ref"])
    out = {"device": device, "configs": []}
    for item in req["configs_by_device"][device]:
        step = lambda what, key=item["key"]: progress.start(f"config {key}: {what}")  # noqa: E731
        try:
            layout, d = reference.probe(ref, item["config"], device, secrets.randbits(31), check_writes=True, step=step)
            del d
            step("setup() follows its seed")
            reference.check_seed_used(ref, item["config"], device, secrets.randbits(31))
        except KernelFault as e:
            raise KernelFault(f"{e} (config {item['key']})") from None
        rec = {
            "key": item["key"],
            "outputs": [{"name": o.name, "shape": list(o.shape), "dtype": o.dtype} for o in layout.outputs],
        }
        progress.record(rec)
        out["configs"].append(rec)
    return out


def task_hardware(req: dict, progress: Progress) -> dict:
    from kopt.measure import device as harness
    from kopt.measure.ceilings import measure_ceilings
    from kopt.measure.environment import environment

    device = harness.select_device(req["device"])
    progress.device(device)
    progress.start("ceilings")
    return {"device": device, "env": environment(device), "measured": measure_ceilings(device, int(req["runs"]))}


TASKS = {
    "correctness": task_correctness,
    "bench": task_bench,
    "check_then_time": task_check_then_time,
    "profile": task_profile,
    "hardware": task_hardware,
    "reference": task_reference,
}


def go_path(request_path: str | Path) -> Path:
    """Where a held child finds its go: beside its request."""
    return Path(request_path).with_name("go.json")


def _hold(go: Path, job: int) -> None:
    """A held child (``kopt.measure.runner.Child``): torch imported, then no device touched until the
    job's go gives the GPU binding (``CUDA_VISIBLE_DEVICES``, read when CUDA starts). It leaves when
    the job process ``job`` is gone: under a profiler its parent is the profiler, which dies with the
    job, maybe before this process has even started."""
    import torch  # noqa: F401 - the start-up this child pays while it waits

    while not go.exists():
        if _gone(job):
            os._exit(4)
        time.sleep(0.01)
    os.environ.update(json.loads(go.read_text())["env"])


def _gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie has)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def main(argv: list[str]) -> None:
    task, req_path, out_path, progress_path = argv
    spare = _spare(task)  # before anything of the request is in this process's memory
    with open(req_path) as f:
        req = json.load(f)
    keep_to_itself()
    code, proc = 0, None
    try:
        proc = _start_kernel(task, req, spare)
        if req.get("held_by"):
            _hold(go_path(req_path), req["held_by"])
        progress = Progress(progress_path)
        result = TASKS[task](req, progress, proc) if proc is not None else TASKS[task](req, progress)
        payload = {"ok": True, "result": result}
    except BaseException as e:  # noqa: BLE001 - everything a kernel does wrong is reported
        if isinstance(e, (KernelFault, HarnessFault)):
            msg = str(e)
        else:
            tb = traceback.extract_tb(e.__traceback__)
            where = f" (at {tb[-1].filename}:{tb[-1].lineno})" if tb else ""
            msg = f"{type(e).__name__}: {e}{where}"
        payload, code = {"ok": False, "error": msg}, HARNESS_EXIT if isinstance(e, HarnessFault) else 3
        traceback.print_exc()
    _end_kernel(proc)  # no process of the kernel's is left when the result is written
    with open(out_path, "w") as f:
        json.dump(payload, f)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def keep_to_itself() -> None:
    """No other process of this user may trace or read this one (PR_SET_DUMPABLE 0; Linux)."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)


def _end_kernel(proc) -> None:
    if proc is None:
        from kopt.measure import reaper

        reaper.sweep()
        return
    proc.finish()


if __name__ == "__main__":
    main(sys.argv[1:])
