"""The GPU availability gate: before a rule runs anything on a GPU, find the idlest idle GPU and
bind the job to it; never run on a busy GPU.

Idle means: no compute process on it but the asking one, utilization at most ``max_util_pct``, and memory use not
growing by more than ``max_memory_growth_mb`` between two readings ``sample_s`` apart. The
readings come from ``nvidia-smi`` (``rocm-smi`` on AMD). With no idle GPU the gate waits
``poll_s`` and looks again, for at most ``max_wait_s``; past that it raises GateTimeout, which
the step records as a failure that stops the loop. On a machine without a GPU (or device=cpu)
the gate passes at once. A GPU monitor that is present but does not answer counts as busy: the
gate cannot tell, so it does not run.

Inside a SLURM job (``SLURM_JOB_ID`` set) the gate looks only at the GPUs SLURM allocated (those
``CUDA_VISIBLE_DEVICES`` lists, as it does anywhere) and waits at most ``cluster_max_wait_s``,
polling every ``cluster_poll_s``: the allocation is the job's, so a busy GPU there is a problem to
report, not a queue to wait in for an hour.

Several GPU jobs on one host (``snakemake --resources gpu=K``) never share a GPU: the gate claims
the GPU it chooses with an exclusive lock on ``lock_dir``/<uuid>.lock, held by the job's process
and released when it ends, however it ends (flock). An idle GPU another job holds is skipped.
The record says when the claim began (``claimed_at``) and, from ``run_gated``, when the child on it
ended (``child_ended_at``): ``benchmarks/gpu_overlap.py`` checks from these that no two jobs used one
GPU at once.
"""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

from kopt.profilers.gpus import GpuReading, monitor

DEFAULTS = {
    "enabled": True,
    "poll_s": 600.0,
    "max_wait_s": 3600.0,
    "max_util_pct": 10.0,
    "max_memory_growth_mb": 64.0,
    "sample_s": 1.0,
    "cluster_max_wait_s": 60.0,
    "cluster_poll_s": 10.0,
    "lock_dir": "/tmp/kopt-gpu-locks",
}

# the GPUs this process holds: uuid -> (the open lock file, when it was claimed); the lock lives as
# long as the file is open
_HELD: dict = {}


def claim(g: GpuReading, lock_dir: str) -> bool:
    """Claim GPU ``g`` for this process (again, if it already holds it); False when another holds it."""
    if g.uuid in _HELD:
        return True
    Path(lock_dir).mkdir(parents=True, exist_ok=True)
    f = open(Path(lock_dir) / f"{g.uuid}.lock", "a")  # noqa: SIM115 - held open for the process's life
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        return False
    _HELD[g.uuid] = (f, round(time.time(), 3))
    return True


def ended(rec: dict) -> dict:
    """``rec`` (a gate record) with ``child_ended_at``: when the work on the claimed GPU ended."""
    return {**rec, "child_ended_at": round(time.time(), 3)} if "gpu_uuid" in rec else rec


class GateTimeout(RuntimeError):
    pass


def _visible() -> list[int] | None:
    for var in ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
        v = os.environ.get(var)
        if v:
            try:
                return [int(x) for x in v.split(",") if x.strip()]
            except ValueError:
                return None
    return None


def idle_gpus(settings: dict, read, sleep=time.sleep) -> tuple[list[GpuReading], str]:
    """The idle GPUs (idlest first), and a line saying why the others are not."""
    first = read()
    sleep(settings["sample_s"])
    second = read()
    if first is None or second is None:
        return [], "the GPU monitor did not answer"
    allowed = _visible()
    before = {g.index: g for g in first}
    idle, why = [], []
    for g in second:
        if allowed is not None and g.index not in allowed:
            continue
        growth = g.memory_mb - before[g.index].memory_mb if g.index in before else 0.0
        if g.processes:
            why.append(f"GPU {g.index}: {g.processes} compute process(es)")
        elif g.util_pct > settings["max_util_pct"]:
            why.append(f"GPU {g.index}: {g.util_pct:g}% busy")
        elif growth > settings["max_memory_growth_mb"]:
            why.append(f"GPU {g.index}: memory grew {growth:g} MB")
        else:
            idle.append(g)
    idle.sort(key=lambda g: (g.util_pct, g.memory_mb, g.index))
    return idle, "; ".join(why) or "no GPU listed"


def acquire(settings: dict | None, device: str = "auto", sleep=time.sleep, clock=time.monotonic) -> tuple[dict, dict]:
    """Wait for an idle GPU; return (environment for the child, record of what was chosen)."""
    s = {**DEFAULTS, **(settings or {})}
    if os.environ.get("SLURM_JOB_ID"):
        s.update(max_wait_s=min(s["max_wait_s"], s["cluster_max_wait_s"]), poll_s=s["cluster_poll_s"])
    if device == "cpu" or not s["enabled"]:
        return {}, {"gate": "passed", "why": "device=cpu" if device == "cpu" else "gate disabled in config"}
    mon = monitor()
    if mon is None:
        return {}, {"gate": "passed", "why": "no nvidia-smi or rocm-smi: no GPU to wait for"}
    name, read = mon
    t0, waits = clock(), 0
    while True:
        idle, why = idle_gpus(s, read, sleep)
        g = next((g for g in idle if claim(g, s["lock_dir"])), None)  # the idlest one no other job holds
        if idle and g is None:
            why = f"every idle GPU is claimed by another job ({', '.join(str(i.index) for i in idle)})"
        if g is not None:
            var = "CUDA_VISIBLE_DEVICES" if name == "nvidia-smi" else "HIP_VISIBLE_DEVICES"
            rec = {
                "gate": "passed",
                "gpu_index": g.index,
                "gpu_uuid": g.uuid,
                "util_pct": g.util_pct,
                "memory_mb": g.memory_mb,
                "waited_s": round(clock() - t0, 1),
                "checks": waits + 1,
                "monitor": name,
                "slurm_job": os.environ.get("SLURM_JOB_ID"),
                "claim": str(Path(s["lock_dir"]) / f"{g.uuid}.lock"),
                "claimed_at": _HELD[g.uuid][1],  # unix time: when this job began to hold the GPU
            }
            return {var: str(g.index)}, rec
        waited = clock() - t0
        if waited + s["poll_s"] > s["max_wait_s"]:
            raise GateTimeout(
                f"gate: no idle GPU after {waited:.0f} s and {waits + 1} checks (limit {s['max_wait_s']:g} s): {why}"
            )
        waits += 1
        sleep(s["poll_s"])
