"""The GPU availability gate: before a rule runs anything on a GPU, find the idlest idle GPU and
bind the job to it; never run on a busy GPU.

Idle means: no compute process on it, utilization at most ``max_util_pct``, and memory use not
growing by more than ``max_memory_growth_mb`` between two readings ``sample_s`` apart. The
readings come from ``nvidia-smi`` (``rocm-smi`` on AMD). With no idle GPU the gate waits
``poll_s`` and looks again, for at most ``max_wait_s``; past that it raises GateTimeout, which
the step records as a failure that stops the loop. On a machine without a GPU (or device=cpu)
the gate passes at once. A GPU monitor that is present but does not answer counts as busy: the
gate cannot tell, so it does not run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass

DEFAULTS = {
    "enabled": True,
    "poll_s": 600.0,
    "max_wait_s": 3600.0,
    "max_util_pct": 10.0,
    "max_memory_growth_mb": 64.0,
    "sample_s": 1.0,
}


class GateTimeout(RuntimeError):
    pass


@dataclass
class GpuReading:
    index: int
    uuid: str
    util_pct: float
    memory_mb: float
    processes: int


def _run(cmd: list[str]) -> str | None:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout if p.returncode == 0 else None


def read_nvidia(smi: str = "nvidia-smi") -> list[GpuReading] | None:
    gpus = _run([smi, "--query-gpu=index,uuid,utilization.gpu,memory.used", "--format=csv,noheader,nounits"])
    apps = _run([smi, "--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv,noheader,nounits"])
    if gpus is None or apps is None:
        return None
    busy: dict[str, int] = {}
    for line in apps.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0]:
            busy[parts[0]] = busy.get(parts[0], 0) + 1
    out = []
    for line in gpus.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) < 4:
            continue
        try:
            out.append(GpuReading(int(parts[0]), parts[1], float(parts[2]), float(parts[3]), busy.get(parts[1], 0)))
        except ValueError:
            return None
    return out


def read_amd(smi: str = "rocm-smi") -> list[GpuReading] | None:
    out = _run([smi, "--showuse", "--showmemuse", "--showpids", "--json"])
    if out is None:
        return None
    try:
        doc = json.loads(out)
    except json.JSONDecodeError:
        return None
    readings = []
    for key, card in doc.items():
        if not key.startswith("card"):
            continue
        idx = int(key[4:])
        util = float(str(card.get("GPU use (%)", "0")).strip() or 0)
        mem = float(str(card.get("GPU Memory Allocated (VRAM%)", "0")).strip() or 0)
        readings.append(GpuReading(idx, key, util, mem, 0))
    pids = doc.get("system", {})
    if any(k.startswith("PID") for k in pids):  # rocm-smi lists compute processes per system
        for r in readings:
            r.processes = sum(1 for k in pids if k.startswith("PID"))
    return readings


def monitor() -> tuple[str, callable] | None:
    if shutil.which("nvidia-smi"):
        return "nvidia-smi", read_nvidia
    if shutil.which("rocm-smi"):
        return "rocm-smi", read_amd
    return None


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
    if device == "cpu" or not s["enabled"]:
        return {}, {"gate": "passed", "why": "device=cpu" if device == "cpu" else "gate disabled in config"}
    mon = monitor()
    if mon is None:
        return {}, {"gate": "passed", "why": "no nvidia-smi or rocm-smi: no GPU to wait for"}
    name, read = mon
    t0, waits = clock(), 0
    while True:
        idle, why = idle_gpus(s, read, sleep)
        if idle:
            g = idle[0]
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
            }
            return {var: str(g.index)}, rec
        waited = clock() - t0
        if waited + s["poll_s"] > s["max_wait_s"]:
            raise GateTimeout(
                f"gate: no idle GPU after {waited:.0f} s and {waits + 1} checks (limit {s['max_wait_s']:g} s): {why}"
            )
        waits += 1
        sleep(s["poll_s"])
