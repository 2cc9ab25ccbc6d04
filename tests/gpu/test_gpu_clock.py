"""GPU-only (issue 31): the clock that decides is Nsight Compute's, read outside the kernel's
process. Kernels that rewrite the clocks of their own process, their statistics, or move work
where Nsight Compute does not look end `failed` or are not kept; an honest copy is a tie.
Output committed from the H100 (docs/runs/h100-clock/)."""

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from kopt.loop import decide as dec
from kopt.steps.compare import candidate
from tests.helpers import FIXTURES, ROOT, run_version

ATTACKS = FIXTURES / "attacks"

pytestmark = pytest.mark.skipif(shutil.which("ncu") is None, reason="no Nsight Compute on this GPU machine")


# one config the in-process clocks can be held to (45 us a call on the H100), beside tiny's two short ones
LONG = {"M": 4096, "N": 4096, "dtype": "float32"}
PARAMS = {
    "device": "auto",
    "timeout_s": 60,
    "bench": {"warmup_ms": 10, "rep_ms": 20, "min_samples": 10, "max_samples": 50, "flush_l2": True,
              "cpu_warmup": 1, "cpu_samples": 2, "clock_calls": 8},
}  # fmt: skip


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    return clock_workspace(tmp_path_factory.mktemp("clock"))


def clock_workspace(parent: Path) -> Path:
    """The tiny softmax workspace (tests/conftest.py's ``tiny``) with LONG added, in ``parent``
    (benchmarks/probes/clock_process_spread.py's too)."""
    dst = parent / "tiny"
    shutil.copytree(FIXTURES / "tiny", dst)
    shutil.copy(ROOT / "examples" / "softmax" / "ref.py", dst / "ref.py")
    shutil.copy(ROOT / "examples" / "softmax" / "kernels" / "v1.py", dst / "kernels" / "v0.py")
    doc = yaml.safe_load((dst / "target.yaml").read_text())
    doc["configs"].append(LONG)
    (dst / "target.yaml").write_text(yaml.safe_dump(doc))
    return dst


@pytest.fixture(scope="module")
def honest(workspace, tmp_path_factory):
    """The honest kernel, run twice (v0 and an identical v1)."""
    runs = []
    for v in ("v0", "v1"):
        runs.append((v, *run_version(workspace, workspace / "kernels" / "v0.py", PARAMS, tmp_path_factory.mktemp(v))))
    return runs


def _fold(tiny: Path, runs: list[tuple[str, dict, pd.DataFrame, Path]]) -> list[dict]:
    cands = [
        candidate(v, str(out / "correctness.json"), df, {}, str(tiny / "kernels" / "v0.py")) for v, _, df, out in runs
    ]
    comps, _ = dec.fold(cands, dec.Params())
    return comps


def _show(df: pd.DataFrame) -> None:
    cols = [
        "config_key",
        "status",
        "clock",
        "gpu_us",
        "gpu_se_us",
        "gpu_launches",
        "median_us",
        "profiler_us",
        "bound_us",
        "bound_se_us",
        "error",
    ]
    print(df[[c for c in cols if c in df]].to_string())


def test_an_honest_kernel_is_decided_on_nsight_computes_clock_and_a_copy_of_it_is_a_tie(workspace, honest):
    for _, corr, df, out in honest:
        _show(df)
        assert corr["status"] == "pass" and (df["status"] == "ok").all(), df["error"].tolist()
        assert set(df["clock"]) == {"ncu"} and (df["gpu_us"] > 0).all() and (df["gpu_launches"] == 1).all()
        assert (df["gpu_se_us"] > 0).all() and (df["gpu_se_us"] < 0.05 * df["gpu_us"]).all()  # one launch a call
        assert df["profiler_us"].isna().all()  # no in-process trace where Nsight Compute decides
        # the events bracket the launches (and their own pair): not below the GPU's time
        assert (df["median_us"] >= 0.95 * df["gpu_us"] - 2.5).all()
        per_config = json.loads((out / "bench.json").read_text())["inputs"]["per_config"]
        assert all(len(rec["clock_calls"]) >= 8 for rec in per_config.values())
        assert (df["gpu_calls"] >= 8).all()  # the noise rule's degrees of freedom, and the machine that clocked it
        machine = json.loads((out / "correctness.json").read_text())["provenance"]["env"]["machine"]
        assert machine.startswith("GPU-") and " boot " in machine
        for key, rec in per_config.items():  # the moved-work bound: the judge's batches, every call checked
            runs = sorted(b["us"] for b in rec["bound_batches"])
            row = df[df["config_key"] == key].iloc[0]
            assert len(runs) >= 6 and runs[0] <= row["bound_us"] <= runs[len(runs) // 2]  # the faster half's median
            assert row["bound_us"] >= row["gpu_us"], (key, row["bound_us"], row["gpu_us"])
        assert "Nsight Compute" in json.loads((out / "bench.json").read_text())["timing"]["clock"][0]
    comps = _fold(workspace, honest)
    print(comps[1]["decision"], comps[1]["reason"], comps[1]["detail"], [r["delta_pct"] for r in comps[1]["per_class"]])
    assert comps[1]["reason"] == "tie", comps[1]  # within noise_floor_us on the tiny classes (H200: +5% of 2.4 us)


@pytest.mark.parametrize(
    "kernel, env, fails",
    [
        ("slows_its_clock.py", {"KOPT_ATTACK_FACTOR": "0.5"}, True),  # at import
        ("slows_its_clock.py", {"KOPT_ATTACK_FACTOR": "0.5", "KOPT_ATTACK_LAZY": "1"}, True),  # after 3 calls
        ("slows_its_clock.py", {"KOPT_ATTACK_FACTOR": "0.9"}, False),  # within the second clocks' 5%
        ("patches_statistics.py", {}, False),
        ("host_half.py", {}, False),
        ("review_disables_spin.py", {}, "gate"),  # Lab's method replaced: the Guard watches kopt's classes
        ("review_answers_early.py", {}, False),  # the timed samples' early answers: the batches are honest
    ],
)
def test_no_attack_on_the_clocks_is_kept(workspace, honest, tmp_path, attack_log, monkeypatch, kernel, env, fails):
    """Against the honest kernel: events and perf_counter at half speed (after blinding the Guard),
    at import or lazily, fail on the config long enough to hold them to; at 0.9 speed, statistics
    halved in the kernel's process, half the rows on the host: never kept."""
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    cheat = run_version(workspace, ATTACKS / kernel, PARAMS, tmp_path)
    _show(cheat[1])
    assert attack_log.is_file(), "the attack never ran"
    if fails == "gate":  # the Guard saw kopt's own code replaced at import: never timed (H100, issue 42)
        assert cheat[0]["status"] == "failed" and "the kernel replaced Lab.clear_caches" in str(cheat[0]["error"])
    elif fails:  # Nsight Compute's clock holds the events, or the profiler's trace does first
        assert cheat[0]["status"] == "pass" and (cheat[1]["status"] == "failed").all()
        error = str(cheat[1]["error"].iloc[0])
        assert "reported times the GPU did not show" in error or "a stream the timer does not see" in error, error
    comps = _fold(workspace, [honest[0], ("v2", *cheat)])
    print(comps[1]["decision"], comps[1]["reason"], comps[1]["detail"])
    assert comps[1]["decision"] != "keep", comps[1]


def test_the_clocks_record_is_never_the_kernels_to_write(workspace, honest, tmp_path, attack_log):
    """Nsight Compute's front end hands the process it starts the record it fills (``--log-file``)
    open for writing (H200: docs/runs/h200-gpu-tests-af7306c/); Landlock checks paths at open
    only. The kernel's process closes it before the kernel is imported
    (kopt.inside.sandbox.close_handed_files): an attack that rewrites every file it was handed
    finds none, under Nsight Compute or not, and the clock reads every launch."""
    cheat = run_version(workspace, ATTACKS / "rewrites_the_record.py", PARAMS, tmp_path)
    _show(cheat[1])
    said = attack_log.read_text().splitlines()
    assert any(ln.startswith("handed under ncu") for ln in said), said
    assert all(ln.endswith(": none") for ln in said), said
    assert cheat[0]["status"] == "pass" and (cheat[1]["status"] == "ok").all(), cheat[1]["error"].tolist()
    assert (cheat[1]["clock"] == "ncu").all() and (cheat[1]["gpu_launches"] == 1).all()
    comps = _fold(workspace, [honest[0], ("v2", *cheat)])
    assert comps[1]["decision"] != "keep", comps[1]


def test_launches_made_with_the_profiler_stopped_still_count(workspace, honest, tmp_path, attack_log):
    """Half the rows launched between cudaProfilerStop and cudaProfilerStart: the clock's Nsight
    Compute ignores both (--disable-profiler-start-stop), so it records both launches of every call
    and the GPU time does not fall; before that option, only the first launch counted (H100) and
    the version was kept as 2x faster."""
    cheat = run_version(workspace, ATTACKS / "stops_the_profiler.py", PARAMS, tmp_path)
    _show(cheat[1])
    assert attack_log.is_file(), "the attack never ran"
    assert cheat[0]["status"] == "pass" and (cheat[1]["status"] == "ok").all(), cheat[1]["error"].tolist()
    assert (cheat[1]["gpu_launches"] == 2).all(), cheat[1]["gpu_launches"].tolist()
    honest_us = honest[0][2].set_index("config_key")["gpu_us"]
    cheat_us = cheat[1].set_index("config_key")["gpu_us"]
    long_key = next(k for k in cheat_us.index if "4096" in k)
    assert cheat_us[long_key] >= 0.9 * honest_us[long_key], (cheat_us[long_key], honest_us[long_key])
    comps = _fold(workspace, [honest[0], ("v2", *cheat)])
    print(comps[1]["decision"], comps[1]["reason"])
    assert comps[1]["decision"] != "keep", comps[1]
