"""Measured ceilings (child process, on the GPU): device-to-device copy bandwidth and the vendor
library's matmul rate per dtype, each the median of repeated runs.

Every run is one ``kopt.inside.calls.event_time_us``, the timer of the kernel's own calls: CUDA
events and a device-wide synchronize on a GPU, wall time on the CPU. The ceilings time a library
operation on buffers much larger than the L2 the way the kernels are timed: the L2 flushed and the
spin queued before every call (``flushed``). Back to back instead, a matmul runs hotter and
slower: cuBLAS then measured 759.8 TFLOP/s in bf16 on the H100 while the harness timed it at 787
on the GEMM example (docs/runs/h100-gemm), a ceiling below the library's own figure."""

from __future__ import annotations

from statistics import median

import torch

from kopt.inside.calls import Lab, event_time_us  # the one timed iteration (no kernel runs here)
from kopt.measure.device import SPIN_CYCLES

WARMUP = 3  # untimed calls before the timed runs
MATMUL_DTYPES = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
NOT_ON_CPU = {"tflops": None, "note": "not measured on the CPU"}


def _timed_seconds(fn, device: str, runs: int, lab: Lab | None) -> list[float]:
    """``runs`` timings of ``fn`` in seconds, after ``WARMUP`` untimed calls; with ``lab``, each
    behind an L2 flush and the spin, as a kernel's calls are timed."""
    for _ in range(WARMUP):
        fn()
    return [event_time_us(fn, device, lab=lab, spin_cycles=SPIN_CYCLES if lab else 0).us * 1e-6 for _ in range(runs)]


def measure_ceilings(device: str, runs: int = 10, *, flushed: bool = True) -> dict:
    """Copy bandwidth (bytes read + written) and matmul TFLOP/s per dtype, medians of ``runs``;
    ``flushed``: timed as the kernels are (else back to back)."""
    res: dict = {"device": device, "runs": runs, "copy": None, "copy_methods": {}, "matmul": {}}
    lab = Lab(device, flush_l2=True) if flushed and device == "cuda" else None
    res["timing"] = "l2-flush+spin, as the kernels" if lab else ("back to back" if device == "cuda" else "wall time")
    res["copy_methods"] = _copy_methods(device, runs, lab)
    best = max(res["copy_methods"], key=lambda k: res["copy_methods"][k]["gbps"])
    res["copy"] = {**res["copy_methods"][best], "best_of": sorted(res["copy_methods"])}
    # 256 on the CPU: bfloat16 matmul there is unvectorised, 2.8 s of every CPU graph's rule
    # hardware at 512 against 0.34 s, at the same rate
    n = 8192 if device == "cuda" else 256
    for key, dt in MATMUL_DTYPES.items():
        if device == "cpu" and key in ("tf32", "fp16"):
            res["matmul"][key] = dict(NOT_ON_CPU)
        else:
            res["matmul"][key] = _matmul_rate(device, runs, n, dt, lab, tf32=key == "tf32")
    res["matmul"]["fp8"] = _fp8_matmul_rate(device, runs, n, lab) if device == "cuda" else dict(NOT_ON_CPU)
    return res


def _copy_methods(device: str, runs: int, lab: Lab | None) -> dict:
    """Two ways of moving the bytes; the ceiling is the faster (the first alone measured 2.87 TB/s
    on the H100 while a Triton softmax moved 2.99 TB/s)."""
    n_bytes = (1 << 30) if device == "cuda" else (64 << 20)
    src = torch.ones(n_bytes // 4, dtype=torch.float32, device=device)
    dst = torch.empty_like(src)
    methods = {
        "memcpy": ("torch copy_ (cudaMemcpyAsync device to device)", lambda: dst.copy_(src)),
        "elementwise": (
            "torch.mul(src, 1, out=dst) (vectorized elementwise kernel)",
            lambda: torch.mul(src, 1.0, out=dst),
        ),
    }
    out = {}
    for key, (label, fn) in methods.items():
        secs = _timed_seconds(fn, device, runs, lab)
        out[key] = {
            "bytes": 2 * n_bytes,
            "gbps": 2 * n_bytes / median(secs) / 1e9,
            "samples_gbps": [2 * n_bytes / s / 1e9 for s in secs],
            "method": f"{label}, bytes read + written",
        }
    return out


def _matmul_record(n: int, secs: list[float], method: str) -> dict:
    return {
        "n": n,
        "tflops": 2 * n**3 / median(secs) / 1e12,
        "samples_tflops": [2 * n**3 / s / 1e12 for s in secs],
        "method": method,
    }


def _matmul_rate(device: str, runs: int, n: int, dt: torch.dtype, lab: Lab | None, *, tf32: bool) -> dict:
    """torch.matmul of two ``n`` x ``n`` matrices of ``dt`` (TF32 allowed only when ``tf32``)."""
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = tf32
    try:
        a = torch.randn(n, n, device=device, dtype=dt)
        b = torch.randn(n, n, device=device, dtype=dt)
        secs = _timed_seconds(lambda: torch.matmul(a, b), device, runs, lab)
        return _matmul_record(n, secs, f"torch.matmul {n}^3 ({'cuBLAS/hipBLAS' if device == 'cuda' else 'CPU BLAS'})")
    except Exception as e:  # noqa: BLE001 - a dtype the device lacks is recorded, not fatal
        return {"tflops": None, "note": f"{type(e).__name__}: {e}"}
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev


def _fp8_matmul_rate(device: str, runs: int, n: int, lab: Lab | None) -> dict:
    """torch._scaled_mm of two ``n`` x ``n`` e4m3 matrices into bfloat16 (GPU only)."""
    try:
        a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)
        b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()
        one = torch.ones((), device=device)
        secs = _timed_seconds(
            lambda: torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16), device, runs, lab
        )
        return _matmul_record(n, secs, f"torch._scaled_mm e4m3 {n}^3")
    except Exception as e:  # noqa: BLE001
        return {"tflops": None, "note": f"{type(e).__name__}: {e}"}
