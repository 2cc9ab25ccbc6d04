"""The one reader of GPU monitors: nvidia-smi / rocm-smi (one subprocess wrapper), NVML clocks,
GPU detection, and which process holds a GPU's device file open (``holds_gpu``: the gate's own
process, the judge's watch of a kernel's tree). The gate's idle readings, provenance's driver
and clocks, env_check's snapshot and the harness's SM clock all come from here.

* Detection (``detect_gpu``) runs when the Snakefile is parsed, so it must be cheap: it reads
  /proc/driver/nvidia (no subprocess), then falls back to ``nvidia-smi`` / ``rocm-smi``. On a
  cluster whose login node has no GPU, set ``gpu:`` in the config to the compute nodes' model.
* NVML through ctypes: the driver's libnvidia-ml is present wherever the NVIDIA driver is, and
  pynvml may not be. Every reader returns None (or []) where its tool is unavailable.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path


def smi(cmd: list[str], timeout: float = 30, any_exit: bool = False) -> str | None:
    """Stdout of a monitor command (nvidia-smi, rocm-smi, a tool's --version), None when absent or
    failing; with ``any_exit``, what it printed (stdout, else stderr) whatever its exit code (the
    readings that decide, the gate's, take only a clean exit)."""
    if not shutil.which(cmd[0]):
        return None
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except (OSError, subprocess.SubprocessError):
        return None
    if any_exit:
        return (p.stdout or p.stderr).strip() or None
    return p.stdout if p.returncode == 0 else None


def query_gpu(fields: list[str], index: int | None = 0) -> dict[str, str] | None:
    """``nvidia-smi --query-gpu`` of one GPU as {field: text}, None without an answer."""
    cmd = ["nvidia-smi", f"--query-gpu={','.join(fields)}", "--format=csv,noheader,nounits"]
    out = smi(cmd + ([] if index is None else ["-i", str(index)]))
    if not out or not out.strip():
        return None
    vals = [v.strip() for v in out.strip().splitlines()[0].split(",")]
    return dict(zip(fields, vals, strict=False))


# --- idle readings (the gate) -------------------------------------------------------------------


@dataclass
class GpuReading:
    index: int
    uuid: str
    util_pct: float
    memory_mb: float
    processes: int  # compute processes on it besides the reading one (its own context is no other's work)


GPU_FILES = ("/dev/nvidia", "/dev/kfd", "/dev/dri/render")


def gpu_majors() -> set[int]:
    """The device numbers' majors of this machine's GPU device files (a file made elsewhere with
    mknod, or reached by another name, is the same device)."""
    majors = set()
    for folder, prefix in (("/dev", "nvidia"), ("/dev", "kfd"), ("/dev/dri", "render")):
        with contextlib.suppress(OSError):
            for name in os.listdir(folder):
                if name.startswith(prefix):
                    with contextlib.suppress(OSError):
                        st = os.stat(os.path.join(folder, name))
                        if stat.S_ISCHR(st.st_mode):
                            majors.add(os.major(st.st_rdev))
    return majors


def holds_gpu(pid: int, majors: set[int] | None = None) -> bool:
    """Whether ``pid`` has an NVIDIA or AMD GPU device open (every CUDA or HIP context does): by its
    name or by its device number. A process whose open files the judge may not read (made
    non-dumpable) counts as holding it: the watch fails closed (a review, issue 42)."""
    majors = gpu_majors() if majors is None else majors
    try:
        listed = _open_files(pid)
    except PermissionError:
        return True
    except OSError:
        return False  # ended
    for folder, fds in listed:
        for fd in fds:
            path = f"{folder}/{fd}"
            with contextlib.suppress(OSError):
                if os.readlink(path).startswith(GPU_FILES):
                    return True
                st = os.stat(path)
                if stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) in majors:
                    return True
    return False


def _open_files(pid: int) -> list[tuple[str, list[str]]]:
    """The folders listing ``pid``'s open files, each with its entries: the process's own and each
    thread's. A thread may have a file table of its own (``unshare(CLONE_FILES)``), and a process
    whose main thread alone has exited lists none of its own (reviews, issue 44)."""
    own = f"/proc/{pid}/fd"
    out = [(own, os.listdir(own))]
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            out.append((f"/proc/{pid}/task/{tid}/fd", os.listdir(f"/proc/{pid}/task/{tid}/fd")))
    return out


def _own_pid_if_on_a_gpu() -> str | None:
    """This process's pid where it holds a GPU's device file open (a context of its own: the GPU
    tests' pytest once a test used CUDA in it waited 10 minutes for itself at every later gate,
    H200), else None. A monitor in a container of its own PID namespace lists host pids: the
    device file keeps another process that happens to bear this number from being taken for it."""
    return str(os.getpid()) if holds_gpu(os.getpid()) else None


def read_nvidia() -> list[GpuReading] | None:
    gpus = smi(["nvidia-smi", "--query-gpu=index,uuid,utilization.gpu,memory.used", "--format=csv,noheader,nounits"])
    apps = smi(["nvidia-smi", "--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv,noheader,nounits"])
    if gpus is None or apps is None:
        return None
    busy: dict[str, int] = {}
    own = _own_pid_if_on_a_gpu()
    for line in apps.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) >= 2 and parts[0] and parts[1] != own:
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


def read_amd() -> list[GpuReading] | None:
    out = smi(["rocm-smi", "--showuse", "--showmemuse", "--showpids", "--json"])
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
        own = f"PID{_own_pid_if_on_a_gpu()}"
        for r in readings:
            r.processes = sum(1 for k in pids if k.startswith("PID") and k != own)
    return readings


def monitor() -> tuple[str, callable] | None:
    if shutil.which("nvidia-smi"):
        return "nvidia-smi", read_nvidia
    if shutil.which("rocm-smi"):
        return "rocm-smi", read_amd
    return None


# --- the snapshot env_check reports ------------------------------------------------------------

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


def snapshot() -> dict | None:
    """Name, driver, clocks, temperature and clock-event reasons of GPU 0 (env_check)."""
    d = query_gpu(SMI_FIELDS)
    if not d:
        return None

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


# --- NVML clocks (the harness, per timed call) -------------------------------------------------

NVML_CLOCK_SM = 1
_lib = None
_handle = None


def _init(bus_id: str | None = None):
    global _lib, _handle
    if _handle is not None:
        return _handle
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
        if lib.nvmlInit_v2() != 0:
            return None
        h = ctypes.c_void_p()
        ok = bus_id is not None and lib.nvmlDeviceGetHandleByPciBusId_v2(bus_id.encode(), ctypes.byref(h)) == 0
        if not ok and lib.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)) != 0:
            return None
        _lib, _handle = lib, h
    except (OSError, AttributeError):
        return None
    return _handle


def sm_clock_mhz(bus_id: str | None = None, maximum: bool = False) -> int | None:
    h = _init(bus_id)
    if h is None:
        return None
    v = ctypes.c_uint()
    fn = _lib.nvmlDeviceGetMaxClockInfo if maximum else _lib.nvmlDeviceGetClockInfo
    return int(v.value) if fn(h, NVML_CLOCK_SM, ctypes.byref(v)) == 0 else None


# --- detection (parse time; no torch) ----------------------------------------------------------


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


def _lines(cmd: list[str]) -> list[str]:
    return [ln.strip() for ln in (smi(cmd, timeout=20, any_exit=True) or "").splitlines() if ln.strip()]


def detect_gpu(device: str = "auto") -> str | None:
    """The name of the GPU the jobs will use, or None on a machine without one (or device=cpu)."""
    if device == "cpu":
        return None
    names = _proc_nvidia() or _lines(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"])
    if names:
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "")
        first = visible.split(",")[0].strip()
        idx = int(first) if first.isdigit() and int(first) < len(names) else 0
        return names[idx]
    amd = [ln.split(":", 2)[-1].strip() for ln in _lines(["rocm-smi", "--showproductname"]) if "Card series" in ln]
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
