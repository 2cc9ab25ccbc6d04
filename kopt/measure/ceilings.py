"""Measured ceilings (child process, on the GPU): device-to-device copy bandwidth and the vendor
library's matmul rate per dtype, each the median of repeated runs."""

from __future__ import annotations

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
