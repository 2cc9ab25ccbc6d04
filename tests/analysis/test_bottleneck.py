"""The bottleneck class: on counters recorded on the H100, on the threshold edges, from the roofline
alone (marked weaker), and the next directions for every class."""

import pytest

from kopt.analysis import bottleneck as bn
from kopt.profilers import ncu
from tests.helpers import FIXTURES

FIX = FIXTURES / "profiles"


def test_ncu_v1_is_memory_bound_and_v0_short_rows_balanced():
    for ln in ncu.parse((FIX / "h100_ncu_details_v1.csv").read_text()):
        v = bn.classify_counters(sm_pct=ln["sm_throughput_pct"], mem_pct=ln["memory_throughput_pct"])
        assert v["class"] == "memory-bound" and v["evidence"] == "counters"
    v0 = ncu.parse((FIX / "h100_ncu_details_v0.csv").read_text())[0]
    v = bn.classify_counters(sm_pct=v0["sm_throughput_pct"], mem_pct=v0["memory_throughput_pct"])
    assert v["class"] in {"memory-bound", "compute-bound"} and "balanced" in v["why"]


EDGES = [
    # sm, mem, theoretical occupancy, limiter, waves -> class
    (0.0, 80.0, None, None, None, "memory-bound"),  # 80% bounds
    (20.0, 79.9, None, None, None, "memory-bound"),  # >= 60 and 10 points ahead
    (70.0, 79.9, None, None, None, "memory-bound"),  # neither 10 ahead, both >= 60: balanced, higher
    (80.0, 50.0, None, None, None, "compute-bound"),
    (60.0, 50.0, None, None, None, "compute-bound"),  # exactly 10 points ahead
    (59.9, 50.0, None, None, None, "latency-bound"),  # under 60 both
    (69.9, 60.0, None, None, None, "compute-bound"),  # balanced, SM higher
    (59.9, 59.9, None, None, 0.99, "small-grid"),  # under one wave
    (59.9, 59.9, None, None, 1.0, "latency-bound"),
    (30.0, 40.0, 49.9, "registers", 5.0, "occupancy-bound"),
    (30.0, 40.0, 49.9, "shared memory", 5.0, "occupancy-bound"),
    (30.0, 40.0, 50.0, "registers", 5.0, "latency-bound"),  # 50% is not low
    (30.0, 40.0, 25.0, "blocks", 5.0, "latency-bound"),  # limited by the block count, not resources
    (30.0, 85.0, 25.0, "registers", 5.0, "memory-bound"),  # a saturated unit comes first
]


@pytest.mark.parametrize("sm,mem,occ,limiter,waves,expected", EDGES)
def test_classify_counters_edges(sm, mem, occ, limiter, waves, expected):
    v = bn.classify_counters(
        sm_pct=sm, mem_pct=mem, theoretical_occupancy_pct=occ, occupancy_limiter=limiter, waves_per_sm=waves
    )
    assert v["class"] == expected, v["why"]


@pytest.mark.parametrize(
    "fraction,side,expected",
    [
        (0.6, "memory", "memory-bound"),
        (0.599, "memory", "latency-bound"),
        (0.95, "compute", "compute-bound"),
        (None, None, "unknown"),
    ],
)
def test_classify_roofline_is_marked_weaker(fraction, side, expected):
    v = bn.classify_roofline(fraction=fraction, side=side)
    assert v["class"] == expected
    assert v["evidence"] in ("roofline-only", "none")


def test_every_class_has_directions_for_triton_and_cuda():
    for cls in ("memory-bound", "compute-bound", "latency-bound", "small-grid", "occupancy-bound"):
        assert bn.next_directions(cls, "triton") and bn.next_directions(cls, "cuda")
