"""What machine ran a job (the judge and the env_check rule; imports torch): the GPU, driver,
CUDA/ROCm, torch, triton, libraries, profilers and clocks."""

from __future__ import annotations

import platform
from pathlib import Path

from kopt import __version__
from kopt.profilers.gpus import query_gpu, smi, snapshot
from kopt.workspace.provenance import library_versions, now, package_version


def environment(device: str) -> dict:
    """What ran the job; called in the child, where torch is already imported."""
    import torch

    env = {
        "device": device,
        "kopt": __version__,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "host": platform.node(),
        "platform": platform.platform(),
        "libraries": library_versions(),
        "triton": package_version("triton"),
    }
    if device == "cuda":
        smi_now = query_gpu(["driver_version", "clocks.sm", "clocks.max.sm"])
        p = torch.cuda.get_device_properties(0)
        env.update(
            gpu=torch.cuda.get_device_name(0),
            gpu_sms=p.multi_processor_count,
            gpu_memory_gib=round(p.total_memory / 2**30, 1),
            capability=f"{p.major}.{p.minor}",
            cuda=torch.version.cuda,
            hip=getattr(torch.version, "hip", None),
            driver=(smi_now or {}).get("driver_version"),
            clocks_sm_mhz=", ".join(smi_now[k] for k in ("clocks.sm", "clocks.max.sm")) if smi_now else None,
            machine=machine(p),
        )
    else:
        env.update(gpu=None, cpu=platform.processor() or platform.machine(), note="Triton interpreter on CPU")
    return env


def machine(props) -> str | None:
    """The GPU and machine start that clock a version: the GPU's UUID and the kernel's boot id. One
    kernel's Nsight Compute time moved by up to 2.8% between H100 machine starts (kopt.loop.decide:
    machine_spread_pct), so the fold compares across them with a wider threshold."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = platform.node()
    uuid = getattr(props, "uuid", None)
    return f"GPU-{uuid} boot {boot}" if uuid is not None else None


def tool_version(exe: str) -> str | None:
    out = smi([exe, "--version"], timeout=60, any_exit=True)
    if out is None:
        return None
    lines = [ln for ln in out.splitlines() if any(c.isdigit() for c in ln)]
    return (lines[-1] if lines else out.splitlines()[-1]).strip()


def bytecode() -> dict:
    """Whether Python keeps compiled modules here. Without (``PYTHONDONTWRITEBYTECODE`` and no
    bytecode shipped) every process compiles all it imports, every time: on the H100 machine's image
    `import torch` 5.1-7.4 s instead of 1.7-2.5 s, one new version 39 s instead of 25
    (docs/runs/h100-turnaround-30s/)."""
    import importlib.util
    import sys

    import torch

    compiled = Path(importlib.util.cache_from_source(torch.__file__)).exists()
    return {
        "dont_write_bytecode": bool(sys.flags.dont_write_bytecode),
        "pycache_prefix": sys.pycache_prefix,
        "torch_compiled": compiled,
        "warning": None
        if compiled or not sys.flags.dont_write_bytecode
        else "Python writes no bytecode here (PYTHONDONTWRITEBYTECODE) and torch has none: every kopt process "
        "compiles all it imports, seconds per process; unset it, or set PYTHONPYCACHEPREFIX to a writable folder",
    }


def collect(device: str) -> dict:
    import torch

    triton_v = package_version("triton")
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
        "bytecode": bytecode(),
        "nvidia_smi": snapshot() if gpu else None,
        "rocm_smi": smi(["rocm-smi", "--showclocks"], any_exit=True) if gpu else None,
        "note": None
        if gpu
        else "no GPU: the Triton interpreter on the CPU (cpu-interpreter); timings are not GPU performance",
    }
