"""The few NVML calls the harness needs (SM clock now and at most), through ctypes: the driver's
libnvidia-ml is present wherever the NVIDIA driver is, and pynvml may not be. Every call returns
None where NVML is unavailable (CPU machines, AMD)."""

from __future__ import annotations

import ctypes

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
