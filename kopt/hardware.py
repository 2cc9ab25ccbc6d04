"""The hardware registry (config/hardware/*.yaml), GPU detection, and measured ceilings.

* Registry: cited figures per GPU model. A figure is ``{value: number, source: URL, where: ...}``
  or ``{value: UNKNOWN, reason: ...}``; an UNKNOWN figure is never used as a target.
* Detection (``detect_gpu``) runs when the Snakefile is parsed, so it must be cheap: it reads
  /proc/driver/nvidia (no subprocess), then falls back to ``nvidia-smi`` / ``rocm-smi``. On a
  cluster whose login node has no GPU, set ``gpu:`` in the config to the compute nodes' model.
* Ceilings (``measure_ceilings``, run in a child process on the GPU): device-to-device copy
  bandwidth and the vendor library's matmul rate per dtype, each the median of repeated runs.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml

UNKNOWN = "UNKNOWN"
DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
SCALARS = ("memory_bandwidth_gbps", "sm_count", "l2_mb", "shared_memory_per_sm_kb", "registers_per_sm_kb")
# the config column dtype -> the compute ceiling that bounds it (CUDA-core fp32 for float32 kernels)
DTYPE_PEAK = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float8_e4m3fn": "fp8", "float8_e5m2": "fp8"}


class RegistryError(ValueError):
    pass


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "unknown"


def _check_figure(fig, where: str) -> None:
    if not isinstance(fig, dict) or "value" not in fig:
        raise RegistryError(f"{where}: a figure must be a mapping with 'value'")
    if fig["value"] == UNKNOWN:
        if not fig.get("reason"):
            raise RegistryError(f"{where}: an UNKNOWN figure needs a 'reason'")
        return
    if not isinstance(fig["value"], (int, float)) or isinstance(fig["value"], bool):
        raise RegistryError(f"{where}: value must be a number or UNKNOWN, not {fig['value']!r}")
    if not str(fig.get("source", "")).startswith("http") or not fig.get("where"):
        raise RegistryError(f"{where}: a figure needs 'source' (a URL) and 'where' (section or page)")


def load_registry(folder: str | Path) -> list[dict]:
    out = []
    for p in sorted(Path(folder).glob("*.yaml")):
        try:
            doc = yaml.safe_load(p.read_text())
        except yaml.YAMLError as e:
            raise RegistryError(f"{p}: not valid YAML: {e}") from None
        if not isinstance(doc, dict) or not doc.get("name") or not doc.get("match") or "figures" not in doc:
            raise RegistryError(f"{p}: needs 'name', 'match' (list of name substrings) and 'figures'")
        figs = doc["figures"]
        for key in SCALARS:
            _check_figure(figs.get(key), f"{p}: figures.{key}")
        for dt in DTYPES:
            _check_figure((figs.get("peak_tflops") or {}).get(dt), f"{p}: figures.peak_tflops.{dt}")
        out.append({**doc, "file": str(p)})
    return out


def match(device_name: str, registry: list[dict]) -> dict | None:
    """The registry entry whose ``match`` substrings occur in the device name (longest match wins)."""
    best, best_len = None, 0
    low = device_name.lower()
    for entry in registry:
        for m in entry["match"]:
            if m.lower() in low and len(m) > best_len:
                best, best_len = entry, len(m)
    return best


def cited(entry: dict | None, key: str) -> float | None:
    """A cited figure's value; None when UNKNOWN or there is no entry."""
    if entry is None:
        return None
    figs = entry["figures"]
    fig = figs["peak_tflops"].get(key) if key in DTYPES else figs.get(key)
    v = (fig or {}).get("value")
    return None if v == UNKNOWN or v is None else float(v)


# --- detection (parse time; no torch) --------------------------------------------------------


def _proc_nvidia() -> list[str]:
    names = []
    for info in sorted(Path("/proc/driver/nvidia/gpus").glob("*/information")):
        try:
            for line in info.read_text().splitlines():
                if line.startswith("Model:"):
                    names.append(line.split(":", 1)[1].strip())
        except OSError:
            continue
    return names


def _smi(cmd: list[str]) -> list[str]:
    if not shutil.which(cmd[0]):
        return []
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [ln.strip() for ln in out.splitlines() if ln.strip()]


def detect_gpu(device: str = "auto") -> str | None:
    """The name of the GPU the jobs will use, or None on a machine without one (or device=cpu)."""
    if device == "cpu":
        return None
    names = _proc_nvidia() or _smi(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
    if names:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        first = visible.split(",")[0].strip()
        idx = int(first) if first.isdigit() and int(first) < len(names) else 0
        return names[idx]
    amd = [ln.split(":", 2)[-1].strip() for ln in _smi(["rocm-smi", "--showproductname"]) if "Card series" in ln]
    return amd[0] if amd else None


def _machine_key() -> str:
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = "?"
    import platform

    return f"{platform.node()}|{boot}|{os.environ.get('CUDA_VISIBLE_DEVICES', '')}"


def detect_gpu_cached(device: str, cache: str | Path) -> str | None:
    """detect_gpu, remembered per machine boot (and CUDA_VISIBLE_DEVICES) in ``cache``: when
    /proc/driver/nvidia is not readable (containers), nvidia-smi costs a good part of a second on
    every Snakemake start. Another node, or a reboot, detects again."""
    import json

    if device == "cpu":
        return None
    p, key = Path(cache), _machine_key()
    try:
        known = json.loads(p.read_text())
    except (OSError, ValueError):
        known = {}
    if key in known:
        return known[key]
    name = detect_gpu(device)
    known[key] = name
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(known, indent=1) + "\n")
    except OSError:
        pass
    return name


# --- measurement (child process; torch) -------------------------------------------------------


def _median(xs: list[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def measure_ceilings(device: str, runs: int = 10) -> dict:
    """Copy bandwidth (bytes read + written) and matmul TFLOP/s per dtype, medians of ``runs``."""
    import torch

    def timed(fn) -> list[float]:
        for _ in range(3):
            fn()
        out = []
        for _ in range(runs):
            if device == "cuda":
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                torch.cuda.synchronize()
                out.append(a.elapsed_time(b) * 1e-3)
            else:
                import time

                t0 = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t0)
        return out

    res: dict = {"device": device, "runs": runs, "copy": None, "copy_methods": {}, "matmul": {}}
    n_bytes = (1 << 30) if device == "cuda" else (64 << 20)
    src = torch.ones(n_bytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    # Two ways of moving the bytes; the ceiling is the faster (the first alone measured 2.87 TB/s
    # on the H100 while a Triton softmax moved 2.99 TB/s).
    methods = {
        "memcpy": ("torch copy_ (cudaMemcpyAsync device to device)", lambda: dst.copy_(src)),
        "elementwise": ("torch.mul(src, 1, out=dst) (vectorized elementwise kernel)", lambda: torch.mul(src, 1.0, out=dst)),
    }
    for key, (label, fn) in methods.items():
        secs = timed(fn)
        res["copy_methods"][key] = {
            "bytes": 2 * n_bytes,
            "gbps": 2 * n_bytes / _median(secs) / 1e9,
            "samples_gbps": [2 * n_bytes / s / 1e9 for s in secs],
            "method": f"{label}, bytes read + written",
        }
    best = max(res["copy_methods"], key=lambda k: res["copy_methods"][k]["gbps"])
    res["copy"] = {**res["copy_methods"][best], "best_of": sorted(res["copy_methods"])}
    del src, dst
    n = 8192 if device == "cuda" else 512
    plans = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    for key, dt in plans.items():
        if device == "cpu" and key in ("tf32", "fp16"):
            res["matmul"][key] = {"tflops": None, "note": "not measured on the CPU"}
            continue
        prev = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = key == "tf32"
        try:
            a = torch.randn(n, n, device=device, dtype=dt)
            b = torch.randn(n, n, device=device, dtype=dt)
            secs = timed(lambda: torch.matmul(a, b))
            res["matmul"][key] = {
                "n": n,
                "tflops": 2 * n**3 / _median(secs) / 1e12,
                "samples_tflops": [2 * n**3 / s / 1e12 for s in secs],
                "method": f"torch.matmul {n}^3 ({'cuBLAS/hipBLAS' if device == 'cuda' else 'CPU BLAS'})",
            }
        except Exception as e:  # noqa: BLE001 - a dtype the device lacks is recorded, not fatal
            res["matmul"][key] = {"tflops": None, "note": f"{type(e).__name__}: {e}"}
        finally:
            torch.backends.cuda.matmul.allow_tf32 = prev
    if device == "cuda":
        try:
            a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)
            b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()
            one = torch.ones((), device=device)
            secs = timed(lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
            res["matmul"]["fp8"] = {
                "n": n,
                "tflops": 2 * n**3 / _median(secs) / 1e12,
                "samples_tflops": [2 * n**3 / s / 1e12 for s in secs],
                "method": f"torch._scaled_mm e4m3 {n}^3",
            }
        except Exception as e:  # noqa: BLE001
            res["matmul"]["fp8"] = {"tflops": None, "note": f"{type(e).__name__}: {e}"}
    else:
        res["matmul"]["fp8"] = {"tflops": None, "note": "not measured on the CPU"}
    return res


def ceilings(measured: dict | None, entry: dict | None) -> dict:
    """The ceilings used for rooflines: measured where measured, else cited, else None (UNKNOWN)."""
    out = {"memory_gbps": None, "compute_tflops": {}, "basis": {}}
    m_copy = (measured or {}).get("copy") or {}
    if m_copy.get("gbps"):
        out["memory_gbps"], out["basis"]["memory"] = m_copy["gbps"], "measured"
    elif cited(entry, "memory_bandwidth_gbps"):
        out["memory_gbps"], out["basis"]["memory"] = cited(entry, "memory_bandwidth_gbps"), "cited"
    else:
        out["basis"]["memory"] = "unknown"
    for dt in DTYPES:
        m = ((measured or {}).get("matmul") or {}).get(dt) or {}
        if m.get("tflops"):
            out["compute_tflops"][dt], out["basis"][dt] = m["tflops"], "measured"
        elif cited(entry, dt):
            out["compute_tflops"][dt], out["basis"][dt] = cited(entry, dt), "cited"
        else:
            out["compute_tflops"][dt], out["basis"][dt] = None, "unknown"
    return out


def peak_for(ceil: dict, cfg: dict) -> float | None:
    """The compute ceiling of a config's dtype (the roofline's), TFLOP/s."""
    return ceil["compute_tflops"].get(DTYPE_PEAK.get(str(cfg.get("dtype", "float32")), "fp32"))


def physical_limits(ceil: dict) -> dict:
    """The fastest this device can go at all: the highest dense matmul rate of any dtype (a kernel
    may use tensor cores of a lower precision than its config's dtype, e.g. tf32 for float32) and
    the memory ceiling, each with its basis (measured, else cited)."""
    comp = {k: v for k, v in (ceil.get("compute_tflops") or {}).items() if v}
    top = max(comp, key=comp.get) if comp else None
    basis = ceil.get("basis") or {}
    return {
        "compute_tflops": comp.get(top),
        "compute_basis": f"{basis.get(top, '?')} {top} matmul ceiling" if top else None,
        "memory_gbps": ceil.get("memory_gbps"),
        "memory_basis": f"{basis.get('memory', '?')} copy ceiling",
    }
