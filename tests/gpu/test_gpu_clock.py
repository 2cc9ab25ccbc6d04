"""GPU-only (issue 31): the clock that decides is Nsight Compute's, read outside the kernel's
process. Kernels that rewrite the clocks of their own process, their statistics, or move work
where Nsight Compute does not look end `failed` or are not kept; an honest copy is a tie.
Output committed from the H100 (docs/runs/h100-clock/)."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from kopt.loop import decide as dec
from kopt.steps.compare import candidate
from tests.helpers import FIXTURES, run_version

ATTACKS = FIXTURES / "attacks"

pytestmark = pytest.mark.skipif(shutil.which("ncu") is None, reason="no Nsight Compute on this GPU machine")


@pytest.fixture
def params(run_params):
    return {**run_params, "bench": {**run_params["bench"], "clock_calls": 8}}


@pytest.fixture
def attack_log(tmp_path, monkeypatch):
    kernel_dir = tmp_path / "kernel"
    kernel_dir.mkdir()
    monkeypatch.setenv("KOPT_ATTACK_LOG", str(kernel_dir / "attack.log"))
    monkeypatch.setenv("KOPT_KERNEL_WRITABLE", str(kernel_dir))
    return kernel_dir / "attack.log"


def _fold(tiny: Path, runs: list[tuple[str, dict, pd.DataFrame, Path]]) -> list[dict]:
    cands = [
        candidate(v, str(out / "correctness.json"), df, {}, str(tiny / "kernels" / "v0.py")) for v, _, df, out in runs
    ]
    comps, _ = dec.fold(cands, dec.Params())
    return comps


def _show(df: pd.DataFrame) -> None:
    cols = ["config_key", "status", "clock", "gpu_us", "gpu_launches", "median_us", "profiler_us", "wall_us", "error"]
    print(df[[c for c in cols if c in df]].to_string())


def test_an_honest_kernel_is_decided_on_nsight_computes_clock(tiny, tmp_path, params):
    corr, df, out = run_version(tiny, tiny / "kernels" / "v0.py", params, tmp_path)
    _show(df)
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), df["error"].tolist()
    assert set(df["clock"]) == {"ncu"} and (df["gpu_us"] > 0).all() and (df["gpu_launches"] >= 1).all()
    # the events bracket the launches (and their own pair): not below the GPU's time
    assert (df["median_us"] >= 0.95 * df["gpu_us"] - 0.5).all()
    per_config = json.loads((out / "bench.json").read_text())["inputs"]["per_config"]
    assert all(len(rec["clock_calls"]) >= 8 for rec in per_config.values())
    assert "Nsight Compute" in json.loads((out / "bench.json").read_text())["timing"]["clock"][0]


@pytest.mark.parametrize("lazy", [False, True])
def test_a_kernel_whose_events_run_slow_is_failed(tiny, tmp_path, params, attack_log, monkeypatch, lazy):
    if lazy:
        monkeypatch.setenv("KOPT_ATTACK_LAZY", "1")
    corr, df, _ = run_version(tiny, ATTACKS / "slows_its_clock.py", params, tmp_path)
    _show(df)
    assert attack_log.read_text().startswith("patched perf_counter and Event.elapsed_time x0.5")
    assert corr["status"] == "pass" and (df["status"] == "failed").all()
    assert "the kernel's process reported times the GPU did not show" in str(df["error"].iloc[0])


@pytest.mark.parametrize("kernel", ["slows_its_clock.py", "patches_statistics.py", "host_half.py"])
def test_no_attack_on_the_clocks_is_kept_and_an_honest_copy_is_a_tie(
    tiny, tmp_path, params, attack_log, monkeypatch, kernel
):
    """Against the honest kernel: an honest copy of it is a tie; events at 0.9 speed, statistics
    halved in the kernel's process, half the rows on the host: never kept."""
    monkeypatch.setenv("KOPT_ATTACK_FACTOR", "0.9")
    honest = run_version(tiny, tiny / "kernels" / "v0.py", params, tmp_path / "v0")
    copy = run_version(tiny, tiny / "kernels" / "v0.py", params, tmp_path / "v1")
    cheat = run_version(tiny, ATTACKS / kernel, params, tmp_path / "v2")
    _show(cheat[1])
    assert attack_log.is_file(), "the attack never ran"
    comps = _fold(tiny, [("v0", *honest), ("v1", *copy)])
    print(comps[1]["decision"], comps[1]["reason"], [r["delta_pct"] for r in comps[1]["per_class"]])
    assert comps[1]["decision"] != "keep", comps[1]  # expected: a tie
    comps = _fold(tiny, [("v0", *honest), ("v2", *cheat)])
    print(comps[1]["decision"], comps[1]["reason"], comps[1]["detail"])
    assert comps[1]["decision"] != "keep", comps[1]
