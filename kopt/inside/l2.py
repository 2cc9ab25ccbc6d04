"""Undo persisting-L2 state before each timed call (in the kernel's process, CUDA only).

A kernel can reserve a persisting L2 carve-out (``cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize,
n)``) and mark its data persisting with an access-policy window; the flush's streaming writes cannot
evict lines in that carve-out, so the data would stay warm across timed calls. Before every timed
call the harness sets the carve-out back to 0 and demotes persisting lines
(``cudaCtxResetPersistingL2Cache``), outside the timed region, as gpu-mode/pygpubench PR #49 and
NVIDIA/cccl's histogram benchmarks do. Through ``cuda.bindings`` when installed, else the CUDA
runtime library torch loaded (ctypes). Where neither is there (or on AMD), the record says so.
"""

from __future__ import annotations

import ctypes

LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06  # cudaLimitPersistingL2CacheSize


def _loaded_cudart() -> ctypes.CDLL | None:
    names = []
    try:
        with open("/proc/self/maps") as f:
            names = sorted({ln.split()[-1] for ln in f if "libcudart.so" in ln})
    except OSError:
        pass
    for name in names + ["libcudart.so", "libcudart.so.13", "libcudart.so.12"]:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


class PersistingL2:
    def __init__(self, device: str):
        self.how, self.error, self._reset = "not applicable (no CUDA device)", None, None
        if device != "cuda":
            return
        import torch

        if getattr(torch.version, "hip", None):
            self.how = "not available on ROCm"
            return
        try:
            from cuda.bindings import runtime as rt

            def reset() -> int:
                a = rt.cudaDeviceSetLimit(rt.cudaLimit.cudaLimitPersistingL2CacheSize, 0)[0]
                b = rt.cudaCtxResetPersistingL2Cache()[0]
                return int(a) or int(b)

            self._reset, self.how = (
                reset,
                "cuda.bindings: cudaDeviceSetLimit(PersistingL2CacheSize, 0) + cudaCtxResetPersistingL2Cache",
            )
        except ImportError:
            lib = _loaded_cudart()
            if lib is None:
                self.how = "unavailable: neither cuda.bindings nor libcudart could be loaded"
                return
            lib.cudaDeviceSetLimit.argtypes = [ctypes.c_int, ctypes.c_size_t]

            def reset() -> int:
                return lib.cudaDeviceSetLimit(LIMIT_PERSISTING_L2_CACHE_SIZE, 0) or lib.cudaCtxResetPersistingL2Cache()

            self._reset, self.how = (
                reset,
                "libcudart (ctypes): cudaDeviceSetLimit(PersistingL2CacheSize, 0) + cudaCtxResetPersistingL2Cache",
            )

    def reset(self) -> None:
        if self._reset is None:
            return
        code = self._reset()
        if code and self.error is None:
            self.error = f"CUDA error {code} (persisting L2 may be unsupported on this GPU)"
            self._reset = None

    def record(self) -> dict:
        return {"how": self.how, "error": self.error}
