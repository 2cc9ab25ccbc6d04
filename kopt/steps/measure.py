"""Rule `measure` (rules/measure.smk): a version on its GPU in one job. One child checks, then
times (kopt.steps.bench), a second profiles every class (kopt.steps.profile). Both start at once,
held (kopt.measure.runner.Child): the profile child's start-up (torch's import, Nsight Compute's
own) is paid while the GPU gate reads the GPUs and while the first child checks and times. It
touches the GPU only after the first child has ended, and only when the version passed its
correctness gate; until then it waits, importing nothing more. One gate claim covers both. On the
CPU, where no profiler wraps a process and the profile is the Triton interpreter's wall time, the
first child's kernel process profiles after its bench, from the bench's own calls
(kopt.measure.child._profile_here): two processes fewer, each importing torch and triton (5-6 s
of CPU a version), and no interpreted call more."""

from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from kopt.loop.gate import ended
from kopt.measure.runner import Child, ChildOutcome, gate_for
from kopt.steps.bench import write_checked
from kopt.steps.common import cannot_run, child_request
from kopt.steps.profile import finish_profile, plan_profile, profile_skipped
from kopt.workspace.target import load_workspace


@dataclass
class Measured:
    """What rule `measure` wrote: correctness.json's doc, bench.csv's frame, profile.json's doc."""

    correctness: dict
    bench: pd.DataFrame
    profile: dict
    timeline: dict[str, float] = field(default_factory=dict)  # seconds since the job's process started


def since_start() -> float:
    """Seconds since this process started (Linux's /proc: the job's own start, its imports included)."""
    try:
        ticks = int(Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()[19])
        return round(float(Path("/proc/uptime").read_text().split()[0]) - ticks / os.sysconf("SC_CLK_TCK"), 2)
    except (OSError, ValueError, IndexError):
        return round(time.process_time(), 2)


def measure(
    out_dir: str | Path,
    *,
    version: str,
    target: str,
    kernel: str,
    profile_dir: str,
    asm_dir: str,
    logs: dict[str, str],
    params: dict,
    profile_settings: dict,
    hardware_json: str | None,
    builds: list[str],
) -> Measured:
    """correctness.{json,md}, bench.csv, bench_samples.csv and bench.json into ``out_dir``, and the
    profile into ``profile_dir`` and ``asm_dir``; ``logs``: the children's logs, ``check`` and
    ``profile``; ``params``: the bench settings, ``profile_settings``: the profile's. Its
    ``timeline``: when each step ended, in seconds since the job's process started (the children's
    own timelines are in bench.json and profile.json)."""
    marks = {"imported": since_start()}
    ws = load_workspace(Path(target).parent, versions=False)
    req = child_request(ws, kernel, params, None, builds)
    prof = plan_profile(
        version=version,
        target=target,
        kernel=kernel,
        out_dir=profile_dir,
        asm_dir=asm_dir,
        settings=profile_settings,
        builds=builds,
    )
    files = {"version": version, "kernel": kernel, "params": params, "hardware_json": hardware_json}

    def not_profiled(doc: dict, df: pd.DataFrame) -> Measured:
        return Measured(doc, df, profile_skipped(prof, f"correctness {doc['status']}: {doc['error']}"), marks)

    blocked = cannot_run(builds, params)
    if blocked:
        return not_profiled(*write_checked(blocked, Path(out_dir), ws, req, **files))
    here = prof.backend == "cpu-interpreter" and not prof.wrapper
    if here:  # no profiler on the CPU: the first child's kernel process profiles from its bench's calls
        req["profile"] = {k: prof.request[k] for k in ("raw_dir", "asm_dir", "calls", "opts", "inputs")}
    with contextlib.ExitStack() as children:
        first = children.enter_context(Child("check_then_time", req, log_path=logs["check"], held=True))
        second = None
        if not here:
            second = Child("profile", prof.request, log_path=logs["profile"], wrapper=prof.wrapper, held=True)
            children.enter_context(second)
        marks["children started"] = since_start()
        gate = gate_for(params)
        marks["gate"] = since_start()
        checked = gate if isinstance(gate, ChildOutcome) else _released(first, gate, params["timeout_s"])
        marks["checked and timed"] = since_start()
        doc, df = write_checked(checked, Path(out_dir), ws, req, **files)
        marks["bench written"] = since_start()
        if doc["status"] != "pass":
            return not_profiled(doc, df)
        profiled = _released(second, gate, profile_settings["timeout_s"]) if second else _profiled_here(checked)
        marks["profiled"] = since_start()
    if here:
        Path(logs["profile"]).write_text(f"{version}: profiled in the check's kernel process (see {logs['check']})\n")
    profile = finish_profile(prof, profiled, logs["profile"])
    marks["profile written"] = since_start()
    return Measured(doc, df, profile, marks)


def _profiled_here(checked: ChildOutcome) -> ChildOutcome:
    """The profile the first child ran after its bench, on the CPU (kopt.measure.child._profile_here),
    as a profile child's outcome; its timeline is the first child's."""
    why = checked.error or (
        f"the profile was planned for the CPU (no GPU found), but the check ran on {checked.device}: "
        "set device: cuda, or cpu, in the config"
    )
    here = (checked.result or {}).get("profile") or {"ok": False, "error": why}
    shared = {"device": checked.device, "gate": checked.gate, "timeline": checked.timeline}
    if here["ok"]:
        return ChildOutcome("ok", result=here["result"], **shared)
    return ChildOutcome("raised", error=here["error"], **shared)


def _released(child: Child, gate: tuple[dict[str, str], dict], timeout_s: float) -> ChildOutcome:
    """A held child given the gate's GPU, followed to its end; its record says when it ended."""
    env, rec = gate
    child.go(env)
    outcome = child.wait(timeout_s)
    outcome.gate = ended(rec)
    return outcome
