"""What bounds a kernel (pure), and what to try next.

With hardware counters (Nsight Compute), the speed-of-light logic:
  * a unit (memory or SM) at 80% or more of its peak, or at 60% or more and 10 points ahead of the
    other, bounds the kernel (memory-bound / compute-bound); both at 80% or more: the higher one;
  * otherwise, a theoretical occupancy under 50% limited by registers or shared memory is
    occupancy-bound;
  * both under 60% is latency-bound, and "small-grid" when the grid is under one wave;
  * both at 60% or more with neither 10 points ahead is "balanced": the higher unit is named.
Without counters (the CPU interpreter, or torch.profiler alone), the roofline fraction decides:
at 60% or more of the ceiling on its side of the ridge the kernel is bound by that side, under it
latency-bound; the evidence is marked "roofline-only" (weaker: it cannot see stalls or occupancy).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

HIGH, MID, LEAD, LOW_OCCUPANCY = 80.0, 60.0, 10.0, 50.0
ROOFLINE_BOUND = 0.6


def classify_counters(
    *,
    sm_pct: float,
    mem_pct: float,
    theoretical_occupancy_pct: float | None = None,
    occupancy_limiter: str | None = None,
    waves_per_sm: float | None = None,
) -> dict:
    nums = {
        "sm_throughput_pct": sm_pct,
        "memory_throughput_pct": mem_pct,
        "theoretical_occupancy_pct": theoretical_occupancy_pct,
        "occupancy_limiter": occupancy_limiter,
        "waves_per_sm": waves_per_sm,
    }

    def out(cls, why):
        return {"class": cls, "evidence": "counters", "why": why, "numbers": nums}

    mem_bound = mem_pct >= HIGH or (mem_pct >= MID and mem_pct - sm_pct >= LEAD)
    sm_bound = sm_pct >= HIGH or (sm_pct >= MID and sm_pct - mem_pct >= LEAD)
    if mem_bound and sm_bound:
        cls = "memory-bound" if mem_pct >= sm_pct else "compute-bound"
        return out(cls, f"memory {mem_pct:.1f}% and SM {sm_pct:.1f}% of peak are both high; the higher one bounds")
    if mem_bound:
        return out("memory-bound", f"memory throughput {mem_pct:.1f}% of peak (SM {sm_pct:.1f}%)")
    if sm_bound:
        return out("compute-bound", f"SM throughput {sm_pct:.1f}% of peak (memory {mem_pct:.1f}%)")
    if mem_pct >= MID and sm_pct >= MID:
        cls = "memory-bound" if mem_pct >= sm_pct else "compute-bound"
        return out(cls, f"balanced: memory {mem_pct:.1f}% and SM {sm_pct:.1f}%, neither {LEAD:g} points ahead")
    if (
        theoretical_occupancy_pct is not None
        and theoretical_occupancy_pct < LOW_OCCUPANCY
        and occupancy_limiter in ("registers", "shared memory")
    ):
        return out(
            "occupancy-bound",
            f"theoretical occupancy {theoretical_occupancy_pct:.1f}% limited by {occupancy_limiter}; "
            f"memory {mem_pct:.1f}%, SM {sm_pct:.1f}%",
        )
    if waves_per_sm is not None and waves_per_sm < 1:
        return out(
            "small-grid", f"under one wave ({waves_per_sm:.2f} waves per SM); memory {mem_pct:.1f}%, SM {sm_pct:.1f}%"
        )
    return out("latency-bound", f"memory {mem_pct:.1f}% and SM {sm_pct:.1f}% of peak, both under {MID:g}%")


def classify_roofline(*, fraction: float | None, side: str | None) -> dict:
    nums = {"roofline_fraction": fraction, "side": side}
    if fraction is None or side is None:
        return {
            "class": "unknown",
            "evidence": "none",
            "why": "no ceiling known for this GPU and dtype",
            "numbers": nums,
        }
    if fraction >= ROOFLINE_BOUND:
        cls = f"{side}-bound"
        why = f"{fraction:.0%} of the {side} ceiling (roofline only: no counters)"
    else:
        cls = "latency-bound"
        why = f"{fraction:.0%} of the {side} ceiling, under {ROOFLINE_BOUND:.0%} (roofline only: no counters)"
    return {"class": cls, "evidence": "roofline-only", "why": why, "numbers": nums}


@lru_cache(maxsize=1)
def strategies() -> dict:
    return yaml.safe_load((Path(__file__).parent / "data" / "strategies.yaml").read_text())


def next_directions(cls: str, backend: str = "triton", n: int = 4) -> list[dict]:
    table = strategies().get(cls, {})
    return list(table.get(backend, []))[:n]
