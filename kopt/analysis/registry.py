"""The hardware registry (config/hardware/*.yaml) and the ceilings a roofline uses.

* Registry: cited figures per GPU model. A figure is ``{value: number, source: URL, where: ...}``
  or ``{value: UNKNOWN, reason: ...}``; an UNKNOWN figure is never used as a target.
* Ceilings: the measured ones (kopt.measure.ceilings) merged with the cited ones, and the
  physical limits no honest result can pass.
"""

from __future__ import annotations

import re
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
