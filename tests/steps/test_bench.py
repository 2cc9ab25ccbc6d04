"""The check-then-time child (kopt.steps.bench, rule `measure`'s first): an honest kernel passes the gate and is timed in the
same child process, a kernel that fails once timed keeps the gate's verdict, and a result beyond the
hardware's physical limit is refused. On the CPU through the Triton interpreter."""

import json
from pathlib import Path

import pandas as pd

from kopt.measure import runner
from kopt.steps.compare import candidate
from tests.helpers import BAD, run_version


def test_honest_kernel_passes_and_is_timed(tiny, tmp_path, run_params):
    corr, df, out = run_version(tiny, tiny / "kernels" / "v0.py", run_params, tmp_path)
    assert corr["status"] == "pass", corr["error"]
    assert all(len(c["seeds"]) == 3 for c in corr["configs"])
    assert len({s["seed"] for c in corr["configs"] for s in c["seeds"]}) == 6  # fresh seeds per config
    assert (df["status"] == "ok").all() and (df["median_us"] > 0).all()
    assert (df["p20_us"] <= df["median_us"]).all() and (df["median_us"] <= df["p80_us"]).all()
    assert list(df["config_class"]) == ["N=64", "N=512"]
    samples = pd.read_csv(out / "bench_samples.csv")
    assert samples.groupby("config_key").size().tolist() == df["n_samples"].tolist()
    meta = json.loads((out / "bench.json").read_text())
    assert len(meta["provenance"]["kernel_sha256"]) == 64
    if corr["device"] == "cpu":
        assert set(df["method"]) == {"cpu-interpreter"}
        assert "cpu-interpreter" in (out / "correctness.md").read_text()


def test_one_child_checks_then_times(tiny, tmp_path, run_params, monkeypatch):
    started = []
    real = runner.run_child
    monkeypatch.setattr(runner, "run_child", lambda task, *a, **kw: started.append(task) or real(task, *a, **kw))
    corr, df, out = run_version(tiny, tiny / "kernels" / "v0.py", run_params, tmp_path)
    assert started == ["check_then_time"] and corr["status"] == "pass" and (df["status"] == "ok").all()
    meta = json.loads((out / "bench.json").read_text())
    assert corr["provenance"]["env"] == meta["provenance"]["env"] and meta["provenance"]["child"] == "ok"
    t = meta["provenance"]["child_timeline"]  # seconds from the child's start: where the turnaround goes
    phases = [k for k in t if ": " not in k]  # and each config's start within a phase, "bench: config ..."
    assert phases == ["ready", "correctness", "bench", "end"] and list(t) == sorted(t, key=t.get)
    assert 0 < t["ready"] <= t["correctness"] <= t["bench"] <= t["end"]  # read times: a late read may tie
    assert {k.split(": ", 1)[0] for k in t if ": " in k} == {"correctness", "bench"}


def test_a_kernel_that_dies_once_timed_keeps_its_gate_verdict_and_fails_its_timing(tiny, tmp_path, run_params):
    corr, df, out = run_version(tiny, BAD / "dies_when_timed.py", run_params, tmp_path)
    assert corr["status"] == "pass" and [c["result"] for c in corr["configs"]] == ["PASS", "PASS"]
    assert corr["provenance"]["child"] == "ok"
    assert (df["status"] == "failed").all(), df
    assert "killed by SIGSEGV while running config M=" in df["error"].iloc[0]
    meta = json.loads((out / "bench.json").read_text())
    assert meta["provenance"]["child"] == "raised"  # the judge outlives its kernel's crash and says so
    # the machine record survives the crash: the checked phase's env, in both files
    assert corr["provenance"]["env"]["python"] and meta["provenance"]["env"] == corr["provenance"]["env"]
    assert set(df["device"]) == {corr["provenance"]["env"]["gpu"] or "cpu"}


def test_an_incorrect_kernel_is_not_timed(tiny, tmp_path, run_params):
    corr, df, _ = run_version(tiny, BAD / "wrong.py", run_params, tmp_path)
    assert corr["status"] == "incorrect"
    assert (df["status"] == "skipped").all() and df["error"].str.startswith("not timed: correctness incorrect").all()
    assert df["median_us"].isna().all()


def _hardware(tmp_path: Path, gbps: float, tflops: float, device: str = "cuda") -> str:
    p = tmp_path / "hardware.json"
    p.write_text(
        json.dumps(
            {
                "device": device,
                "ceilings": {
                    "memory_gbps": gbps,
                    "compute_tflops": {"fp32": tflops, "bf16": None},
                    "basis": {"memory": "measured", "fp32": "measured"},
                },
            }
        )
    )
    return str(p)


def test_faster_than_the_hardware_is_refused(tiny, tmp_path, run_params):
    hw = _hardware(tmp_path, gbps=1e-9, tflops=1e-12)  # a fake ceiling every kernel beats
    corr, df, out = run_version(tiny, tiny / "kernels" / "v0.py", run_params, tmp_path, hardware_json=hw)
    assert corr["status"] == "pass"
    assert (df["status"] == "failed").all()
    assert df["error"].str.contains("faster than the hardware allows").all()
    assert df["error"].str.contains("result reuse or skipped work?").all()
    cand = candidate("v9", str(out / "correctness.json"), df, {}, "k.py")
    assert cand.status == "failed" and "faster than the hardware allows" in cand.reason
    assert json.loads((out / "bench.json").read_text())["physical_limit"]["checked"] is True


def test_cpu_ceilings_are_not_a_physical_limit(tiny, tmp_path, run_params):
    """The CPU's ceilings are DRAM rates; the interpreter's tiny configs run from cache."""
    hw = _hardware(tmp_path, gbps=1e-9, tflops=1e-12, device="cpu")
    _, df, out = run_version(
        tiny, tiny / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path, hardware_json=hw
    )
    assert (df["status"] == "ok").all()
    assert json.loads((out / "bench.json").read_text())["physical_limit"]["checked"] is False


def test_within_the_hardware_is_timed(tiny, tmp_path, run_params):
    hw = _hardware(tmp_path, gbps=1e6, tflops=1e6)
    _, df, _ = run_version(tiny, tiny / "kernels" / "v0.py", run_params, tmp_path, hardware_json=hw)
    assert (df["status"] == "ok").all(), df["error"].tolist()
