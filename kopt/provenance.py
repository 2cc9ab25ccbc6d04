"""Provenance carried by every result file: content hashes and the software/hardware that ran."""

from __future__ import annotations

import hashlib
import json
import platform
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from . import __version__


def sha256_file(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def sha256_json(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def hashes(kernel: str | Path, ref: str | Path, target: str | Path, params: dict) -> dict:
    return {
        "kernel_sha256": sha256_file(kernel),
        "ref_sha256": sha256_file(ref),
        "target_sha256": sha256_file(target),
        "params_sha256": sha256_json(params),
    }


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _nvidia_smi(query: str) -> str | None:
    exe = shutil.which("nvidia-smi")
    if not exe:
        return None
    try:
        out = subprocess.run(
            [exe, f"--query-gpu={query}", "--format=csv,noheader"], capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None


LIBRARIES = ("numpy", "scipy", "pandas", "matplotlib", "jinja2", "pyyaml", "jsonschema", "cuda-bindings", "nvidia-ml-py")


def library_versions() -> dict[str, str | None]:
    """Versions of the numeric and support libraries (None: not installed), without importing them."""
    from importlib import metadata

    out = {}
    for name in LIBRARIES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


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
    }
    try:
        import triton

        env["triton"] = triton.__version__
    except ImportError:
        env["triton"] = None
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        env.update(
            gpu=torch.cuda.get_device_name(0),
            gpu_sms=p.multi_processor_count,
            gpu_memory_gib=round(p.total_memory / 2**30, 1),
            capability=f"{p.major}.{p.minor}",
            cuda=torch.version.cuda,
            hip=getattr(torch.version, "hip", None),
            driver=_nvidia_smi("driver_version"),
            clocks_sm_mhz=_nvidia_smi("clocks.sm,clocks.max.sm"),
        )
    else:
        env.update(gpu=None, cpu=platform.processor() or platform.machine(), note="Triton interpreter on CPU")
    return env
