"""results/env_check.{json,md}: what this machine is, for every report (runs in the rule process)."""

from __future__ import annotations

import platform
import shutil
import subprocess

from .provenance import library_versions, now

SMI_FIELDS = [
    "name",
    "driver_version",
    "clocks.sm",
    "clocks.max.sm",
    "temperature.gpu",
    "clocks.applications.graphics",
    "clocks.default_applications.graphics",
    "clocks_event_reasons.active",
]


def _run(cmd: list[str]) -> str | None:
    if not shutil.which(cmd[0]):
        return None
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return (p.stdout or p.stderr).strip() or None


def tool_version(exe: str) -> str | None:
    out = _run([exe, "--version"])
    if out is None:
        return None
    lines = [ln for ln in out.splitlines() if any(c.isdigit() for c in ln)]
    return (lines[-1] if lines else out.splitlines()[-1]).strip()


def nvidia_smi() -> dict | None:
    out = _run(["nvidia-smi", f"--query-gpu={','.join(SMI_FIELDS)}", "--format=csv,noheader,nounits", "-i", "0"])
    if not out or "," not in out:
        return None
    vals = [v.strip() for v in out.splitlines()[0].split(",")]
    d = dict(zip(SMI_FIELDS, vals))

    def num(k):
        try:
            return float(d.get(k, ""))
        except ValueError:
            return None

    app, default = num("clocks.applications.graphics"), num("clocks.default_applications.graphics")
    return {
        "name": d.get("name"),
        "driver": d.get("driver_version"),
        "sm_clock_mhz": num("clocks.sm"),
        "sm_clock_max_mhz": num("clocks.max.sm"),
        "temperature_c": num("temperature.gpu"),
        "application_clock_mhz": app,
        "default_application_clock_mhz": default,
        "clocks_locked": "application clocks changed from the default"
        if app and default and app != default
        else "not locked by application clocks (locked GPU clocks set with nvidia-smi -lgc are not reported by this query)",
        "clock_event_reasons": d.get("clocks_event_reasons.active"),
    }


def collect(device: str) -> dict:
    import torch

    try:
        import triton

        triton_v = triton.__version__
    except ImportError:
        triton_v = None
    try:
        import snakemake

        sm_v = snakemake.__version__
    except (ImportError, AttributeError):
        sm_v = None
    gpu = device != "cpu" and torch.cuda.is_available()
    return {
        "created": now(),
        "host": platform.node(),
        "python": platform.python_version(),
        "device": "cuda" if gpu else "cpu",
        "gpu": torch.cuda.get_device_name(0) if gpu else None,
        "cuda": torch.version.cuda if gpu else None,
        "rocm": getattr(torch.version, "hip", None) if gpu else None,
        "torch": torch.__version__,
        "triton": triton_v,
        "snakemake": sm_v,
        "libraries": library_versions(),
        "profilers": {"ncu": tool_version("ncu"), "rocprofv3": tool_version("rocprofv3")},
        "nvidia_smi": nvidia_smi() if gpu else None,
        "rocm_smi": _run(["rocm-smi", "--showclocks"]) if gpu and shutil.which("rocm-smi") else None,
        "note": None if gpu else "no GPU: the Triton interpreter on the CPU (cpu-interpreter); timings are not GPU performance",
    }
