"""Nsight Compute: the command line we run and the parser of its CSV, on output recorded on the H100
(tests/fixtures/profiles/), including the NVTX ranges that name each launch's config class."""

import pytest

from kopt.profilers import ncu
from tests.helpers import FIXTURES, NVTX_PROBE

FIX = FIXTURES / "profiles"


def test_ncu_details_v1_one_launch_per_class():
    launches = ncu.parse((FIX / "h100_ncu_details_v1.csv").read_text())
    assert [ln["kernel"] for ln in launches] == ["softmax_one_pass"] * 3
    first = launches[0]  # N=256, M=524288: the class's largest config
    assert first["grid"] == "(524288, 1, 1)" and first["threads_per_block"] == 32
    assert first["memory_throughput_pct"] == pytest.approx(89.41)
    assert first["sm_throughput_pct"] == pytest.approx(22.31)
    assert first["registers_per_thread"] == 22
    assert first["theoretical_occupancy_pct"] == 50 and first["occupancy_limiter"] == "blocks"
    assert first["waves_per_sm"] > 100
    assert first["duration_us"] == pytest.approx(351.488)
    # DRAM bytes: a row read and written once = 2 * M * N * 4 bytes, within a few %
    assert first["dram_bytes"] == pytest.approx(2 * 524288 * 256 * 4, rel=0.05)
    assert first["warp_stalls_top"][0]["reason"] == "long_scoreboard"
    assert {"SOLBottleneck", "TheoreticalOccupancy"} <= {r["rule"] for r in first["rules"]}


def test_ncu_rejects_output_without_csv():
    with pytest.raises(ValueError, match="no CSV rows"):
        ncu.parse_details("==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM\n")
    assert ncu.number("1,215,000,000.00") == 1215000000.0 and ncu.number("n/a") is None


def test_ncu_command_selects_by_nvtx_and_name():
    cmd = ncu.command("ncu", "out.csv", "softmax_one_pass")
    assert "--clock-control" in cmd and cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--nvtx-include") + 1] == "kopt-profile/"
    assert cmd[-1] == "regex:softmax_one_pass"
    assert all(s in cmd for s in ncu.SECTIONS)


def test_ncu_nvtx_stack_names_the_class():
    import csv
    import io

    text = NVTX_PROBE.read_text()
    rows = list(csv.DictReader(io.StringIO("\n".join(ln for ln in text.splitlines() if ln.startswith('"')))))
    col = next(k for k in rows[0] if k.startswith(ncu.NVTX_COLUMN))
    by_id = {r["ID"]: ncu.nvtx_class(r[col], prefix="class ") for r in rows}
    assert by_id == {"0": "N=256", "1": "N=2048", "2": "N=2048"}  # N=2048 launched two kernels
    assert ncu.nvtx_class(rows[0][col]) is None  # no kopt-class range in this probe


def test_ncu_per_kernel_reads_like_torch_trace():
    launches = ncu.parse((FIX / "h100_ncu_details_v1.csv").read_text())
    rows = ncu.per_kernel(launches[:1])
    assert rows[0]["name"] == "softmax_one_pass" and rows[0]["us_per_call"] == launches[0]["duration_us"]
    assert rows[0]["block"] == [32, 1, 1] and rows[0]["share"] == 1.0


def test_ncu_assigns_each_launch_to_its_class_range_h100():
    """v1 of the example profiled by the graph on the H100: one launch per class, named by its range."""
    launches = ncu.parse((FIX / "h100_ncu_classes_v1.csv").read_text())
    assert [ln["class"] for ln in launches] == ["N=256", "N=2048", "N=16384"]
    assert all(ln["kernel"] == "softmax_one_pass" and ln["duration_us"] > 0 for ln in launches)
