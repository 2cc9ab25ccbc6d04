"""Rule `measure` (rules/measure.smk): a version's correctness gate and timing on its GPU, in one
child (kopt.steps.bench), started held: its start-up (torch's import) is paid while the GPU gate
reads the GPUs. The decision (rule `compare`) needs nothing more; rule `profile` follows it
(kopt.steps.profile.profile_version). On the CPU, where no profiler wraps a process and the
profile is the Triton interpreter's wall time, the child's kernel process profiles after its bench,
from the bench's own calls (kopt.measure.child._profile_here), and bench.json keeps that record for
rule `profile`: no second process importing torch and triton (5-6 s of CPU a version)."""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from kopt.loop.gate import ended
from kopt.measure.runner import Child, ChildOutcome, gate_for
from kopt.steps.bench import write_checked
from kopt.steps.common import cannot_run, child_request
from kopt.steps.profile import keep_cpu_profile, plan_profile, profiles_in_the_check
from kopt.workspace.target import load_workspace


@dataclass
class Measured:
    """What rule `measure` wrote: correctness.json's doc and bench.csv's frame."""

    correctness: dict
    bench: pd.DataFrame
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
    log: str,
    params: dict,
    profile_settings: dict,
    hardware_json: str | None,
    builds: list[str],
) -> Measured:
    """correctness.{json,md}, bench.csv, bench_samples.csv and bench.json into ``out_dir``; ``log``:
    the child's log; ``params``: the bench settings, ``profile_settings``: the profile's (on the
    CPU the child profiles too). Its ``timeline``: when each step ended, in seconds since the job's
    process started (the child's own timeline is in bench.json)."""
    marks = {"imported": since_start()}
    ws = load_workspace(Path(target).parent, versions=False)
    req = child_request(ws, kernel, params, None, builds)
    files = {"version": version, "kernel": kernel, "params": params, "hardware_json": hardware_json}
    blocked = cannot_run(builds, params)
    if blocked:
        return Measured(*write_checked(blocked, Path(out_dir), ws, req, **files), marks)
    here = profiles_in_the_check(profile_settings)
    with tempfile.TemporaryDirectory(prefix="kopt-profile-") as scratch:
        if here:  # no profiler on the CPU: the child's kernel process profiles from its bench's calls
            # the profile's own plan, its raw and assembly folders in scratch (the interpreter leaves them empty)
            prof = plan_profile(version=version, target=target, kernel=kernel, out_dir=scratch,
                                asm_dir=str(Path(scratch) / "asm"), settings=profile_settings, builds=builds)  # fmt: skip
            req["profile"] = {k: prof.request[k] for k in ("raw_dir", "asm_dir", "calls", "opts", "inputs")}
        with Child("check_then_time", req, log_path=log, held=True) as child:
            marks["child started"] = since_start()
            gate = gate_for(params)
            marks["gate"] = since_start()
            checked = gate if isinstance(gate, ChildOutcome) else _released(child, gate, params["timeout_s"])
    marks["checked and timed"] = since_start()
    doc, df = write_checked(checked, Path(out_dir), ws, req, **files)
    if here and doc["status"] == "pass":
        keep_cpu_profile(Path(out_dir) / "bench.json", _profiled_here(checked))
    marks["bench written"] = since_start()
    return Measured(doc, df, marks)


def _profiled_here(checked: ChildOutcome) -> ChildOutcome:
    """The profile the child ran after its bench, on the CPU (kopt.measure.child._profile_here), as
    a profile child's outcome; its timeline is the check's."""
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
