"""kopt.analysis.directions: each direction comes from the class's evidence and names it. Table-driven
on Nsight Compute output recorded on the H100 (tests/fixtures/profiles) with the roofline fractions
of those versions' benchmarks (docs/runs/h100-merged-child), and on constructed evidence for the
rules those runs do not reach."""

from pathlib import Path

import pytest

from kopt.analysis.directions import Evidence, directions
from kopt.profilers import ncu

PROFILES = Path(__file__).resolve().parents[1] / "fixtures" / "profiles"
GB = 1024**3  # every profiled softmax config moves 1.07 GB: it reads and writes 512 MiB


def _recorded(fixture: str, launch: int, fraction: float) -> Evidence:
    counters = ncu.parse((PROFILES / fixture).read_text())[launch]
    point = {"fraction": fraction, "side": "memory", "bytes": GB}
    resources = {
        "registers_per_thread": counters["registers_per_thread"],
        "spills": 0,
        "warps": counters["warps_per_block"],
    }
    return Evidence.of_class("memory-bound", "triton", counters, resources, point, 0.9)


@pytest.mark.parametrize(
    ("fixture", "launch", "fraction", "ids", "because"),
    [
        # v0, two passes over each row: warps wait on loads while memory runs at 76%
        (
            "h100_ncu_details_v0.csv",
            0,
            0.82,
            ["pipelining"],
            "long scoreboard, 7.4 warps per issue) while memory runs at 76%",
        ),
        # v0 on 16384-wide rows: the second pass re-reads rows that fell out of L2
        (
            "h100_ncu_details_v0.csv",
            2,
            0.66,
            ["fuse-passes"],
            "DRAM moved 1.59 GB, 1.48x the 1.07 GB the problem needs",
        ),
        # v1, one pass: at the copy ceiling; on short rows one warp per program caps occupancy
        ("h100_ncu_classes_v1.csv", 0, 1.02, ["less-work", "num-warps"], "102% of the memory ceiling"),
        ("h100_ncu_classes_v1.csv", 2, 1.01, ["less-work"], "at or above the 90% target"),
    ],
)
def test_recorded_profiles_give_the_directions_their_evidence_supports(fixture, launch, fraction, ids, because):
    got = directions(_recorded(fixture, launch, fraction))
    assert [d["id"] for d in got] == ids
    assert because in got[0]["evidence"]


def test_one_warp_per_program_is_named_with_the_occupancy_it_costs():
    got = directions(_recorded("h100_ncu_classes_v1.csv", 0, 1.02))
    assert got[1]["evidence"] == "1 warp(s) per block: the blocks-per-SM limit caps theoretical occupancy at 50%"


@pytest.mark.parametrize(
    ("evidence", "first", "because"),
    [
        (dict(bottleneck="compute-bound", fraction=0.95, side="compute"), "less-work", "95% of the compute ceiling"),
        (
            dict(bottleneck="compute-bound", fraction=0.6, side="compute", warps_per_block=4, stages=3),
            "tile-shape",
            "60% of the compute ceiling, 30% short of the target, with 4 warps and 3 stages",
        ),
        (dict(bottleneck="latency-bound", spills=96, registers=255), "fewer-registers", "96 bytes spilled"),
        (dict(bottleneck="small-grid", waves=0.4), "split-work", "the grid fills 0.40 of one wave"),
        (dict(bottleneck="latency-bound", waves=1.3), "persistent", "1.30 waves: the last one runs 30% full"),
        (
            dict(
                bottleneck="occupancy-bound",
                theoretical_occupancy_pct=25,
                occupancy_limiter="shared memory",
                shared_bytes=160 * 1024,
                stages=5,
            ),
            "less-shared",
            "160 KiB of shared memory per block (stages 5)",
        ),
        (
            dict(
                bottleneck="occupancy-bound",
                language="cuda",
                theoretical_occupancy_pct=25,
                occupancy_limiter="registers",
                registers=128,
            ),
            "launch-bounds",
            "128 registers per thread",
        ),
        (
            dict(bottleneck="latency-bound", top_stall="barrier", top_stall_warps=12.0, mem_pct=40),
            "ilp",
            "the top warp stall is barrier (12.0 warps per issue)",
        ),
    ],
)
def test_each_rule_fires_on_its_evidence(evidence, first, because):
    got = directions(Evidence(**evidence))
    assert got[0]["id"] == first and because in got[0]["evidence"], got


def test_a_compute_bound_kernel_at_its_ceiling_is_not_told_to_tune_math():
    got = directions(Evidence(bottleneck="compute-bound", fraction=0.95, side="compute", sm_pct=92, mem_pct=30))
    assert [d["id"] for d in got] == ["less-work"]


def test_without_evidence_the_class_table_fills_in_and_says_so():
    got = directions(Evidence(bottleneck="memory-bound", fraction=0.7, side="memory"))
    assert got and all(d["evidence"] == "no rule's evidence holds; the memory-bound table" for d in got)
    assert got[0]["id"] == "fuse-passes"
