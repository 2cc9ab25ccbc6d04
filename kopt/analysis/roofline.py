"""Roofline arithmetic (pure): one config's position under the ceilings of the GPU it ran on.

Inputs are the reference's FLOPs and bytes for the config, the time (µs) and the ceilings
(TFLOP/s for the config's dtype, GB/s). A ceiling of None (UNKNOWN and not measured) leaves the
figures that need it as None: an unknown peak is never used as a target.
"""

from __future__ import annotations

TARGET_FRACTION = 0.9


def point(
    *,
    flops: float | None,
    nbytes: float | None,
    time_us: float,
    peak_tflops: float | None,
    peak_gbps: float | None,
    target_fraction: float = TARGET_FRACTION,
) -> dict:
    sec = time_us * 1e-6
    ai = flops / nbytes if flops and nbytes else None
    ridge = peak_tflops * 1e3 / peak_gbps if peak_tflops and peak_gbps else None  # FLOP/byte
    achieved_tflops = flops / sec / 1e12 if flops else None
    achieved_gbps = nbytes / sec / 1e9 if nbytes else None
    if ai is not None and ridge is not None:
        side = "memory" if ai < ridge else "compute"
    elif nbytes and not flops:
        side = "memory"
    elif flops and not nbytes:
        side = "compute"
    else:
        side = None
    attainable_tflops = None
    if ai is not None and peak_gbps and peak_tflops:
        attainable_tflops = min(peak_tflops, ai * peak_gbps / 1e3)
    if side == "memory" and achieved_gbps is not None and peak_gbps:
        fraction = achieved_gbps / peak_gbps
    elif side == "compute" and achieved_tflops is not None and peak_tflops:
        fraction = achieved_tflops / peak_tflops
    else:
        fraction = None
    return {
        "flops": flops,
        "bytes": nbytes,
        "time_us": time_us,
        "arithmetic_intensity": ai,
        "ridge_point": ridge,
        "side": side,
        "peak_tflops": peak_tflops,
        "peak_gbps": peak_gbps,
        "attainable_tflops": attainable_tflops,
        "achieved_tflops": achieved_tflops,
        "achieved_gbps": achieved_gbps,
        "fraction": fraction,
        "target_fraction": target_fraction,
        "target_reached": fraction is not None and fraction >= target_fraction,
        "gap_to_target": None if fraction is None else max(target_fraction - fraction, 0.0),
    }


def beyond_hardware(
    *, flops: float | None, nbytes: float | None, time_us: float, limits: dict, margin_pct: float
) -> str | None:
    """Why a config's achieved rate is physically impossible (above ``limits`` by more than
    ``margin_pct``), or None. ``limits``: kopt.analysis.registry.physical_limits."""
    sec, allow = time_us * 1e-6, 1 + margin_pct / 100
    out = []
    if flops and limits.get("compute_tflops"):
        tf = flops / sec / 1e12
        if tf > limits["compute_tflops"] * allow:
            out.append(
                f"{tf:,.1f} TFLOP/s against {limits['compute_tflops']:,.1f} TFLOP/s ({limits['compute_basis']}) "
                f"+{margin_pct:g}%"
            )
    if nbytes and limits.get("memory_gbps"):
        gb = nbytes / sec / 1e9
        if gb > limits["memory_gbps"] * allow:
            out.append(
                f"{gb:,.0f} GB/s against {limits['memory_gbps']:,.0f} GB/s ({limits['memory_basis']}) +{margin_pct:g}%"
            )
    return "; ".join(out) or None
