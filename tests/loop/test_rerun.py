"""kopt.loop.rerun: a rerun against the recorded run, per config and per class with the noise rule,
and every difference in what they were made from and ran on."""

import json

import pandas as pd

from kopt.loop.decide import Params
from kopt.loop.rerun import compare_runs, summary

NO_FLOOR = Params(noise_floor_us=0.0)  # the 1% rule alone

CONFIGS = [("M=1,N=64", "N=64"), ("M=2,N=64", "N=64"), ("M=1,N=512", "N=512")]


def _run(root, *, device="cuda", kernel="a" * 64, torch="2.11.0", gpu_us=(10.0, 20.0, 30.0), results=None):
    d = root / "v1"
    d.mkdir(parents=True)
    env = {"device": device, "gpu": "NVIDIA H100 80GB HBM3", "torch": torch, "libraries": {"numpy": "2.3.5"}}
    configs = [{"key": k, "result": r} for (k, _), r in zip(CONFIGS, results or ["PASS"] * 3, strict=True)]
    status = "pass" if all(c["result"] == "PASS" for c in configs) else "incorrect"
    prov = {"kernel_sha256": kernel, "ref_sha256": "r" * 64, "target_sha256": "t" * 64, "env": env}
    (d / "correctness.json").write_text(
        json.dumps({"status": status, "device": device, "configs": configs, "provenance": prov})
    )
    rows = [
        {"config_key": k, "config_class": c, "status": "ok", "median_us": t * 1.1, "profiler_us": t}
        for (k, c), t in zip(CONFIGS, gpu_us, strict=True)
    ]
    pd.DataFrame(rows).to_csv(d / "bench.csv", index=False)
    return root


def test_the_same_results_within_the_noise_reproduce(tmp_path):
    a = _run(tmp_path / "a")
    b = _run(tmp_path / "b", gpu_us=(10.05, 19.95, 30.2))
    doc = compare_runs(a, b, "v1", NO_FLOOR)
    assert doc["verdict"] == "reproduces", summary(doc)
    assert [t["verdict"] for t in doc["timing"]] == ["same", "same"] and doc["timing"][0]["basis"] == "profiler_us"


def test_a_class_beyond_the_noise_differs_and_is_named(tmp_path):
    doc = compare_runs(_run(tmp_path / "a"), _run(tmp_path / "b", gpu_us=(10.0, 20.0, 33.0)), "v1", NO_FLOOR)
    assert doc["verdict"] == "differs"
    assert doc["timing"][1] == {
        "class": "N=512",
        "basis": "profiler_us",
        "configs": 1,
        "delta_pct": 10.0,
        "verdict": "slower",
    }
    assert "  class N=512: +10.00% on profiler_us (slower)" in summary(doc)


def test_a_changed_kernel_or_verdict_differs_and_the_machine_is_listed(tmp_path):
    a = _run(tmp_path / "a")
    b = _run(tmp_path / "b", kernel="b" * 64, torch="2.13.0", results=["PASS", "FAIL", "PASS"])
    doc = compare_runs(a, b, "v1", NO_FLOOR)
    assert doc["verdict"] == "differs"
    assert {"what": "kernel_sha256", "recorded": "a" * 64, "rerun": "b" * 64} in doc["inputs"]
    assert {"config": "M=2,N=64", "recorded": "PASS", "rerun": "FAIL"} in doc["correctness"]
    assert doc["machine"] == [{"what": "torch", "recorded": "2.11.0", "rerun": "2.13.0"}]


def test_a_machine_difference_alone_reproduces_and_cpu_timings_are_not_compared(tmp_path):
    a = _run(tmp_path / "a", device="cpu")
    b = _run(tmp_path / "b", device="cpu", torch="2.13.0", gpu_us=(50.0, 50.0, 50.0))
    doc = compare_runs(a, b, "v1", NO_FLOOR)
    assert doc["verdict"] == "reproduces" and doc["timing"] == [] and "CPU-interpreter" in doc["timing_note"]
    assert doc["machine"] and "  machine differ: torch: 2.11.0 -> 2.13.0" in summary(doc)


def test_a_setting_both_runs_read_with_another_value_differs_one_only_one_read_does_not(tmp_path):
    a, b = _run(tmp_path / "a"), _run(tmp_path / "b")
    for root, settings in (
        (a, {"timeout_s": 300, "inputs": {"seed": 1}}),
        (b, {"timeout_s": 300, "inputs": {"seed": 2}, "bench": {"x": 1}}),
    ):
        doc = json.loads((root / "v1" / "correctness.json").read_text())
        doc["provenance"]["settings"] = settings
        (root / "v1" / "correctness.json").write_text(json.dumps(doc))
    doc = compare_runs(a, b, "v1", NO_FLOOR)
    assert (
        doc["inputs"] == [{"what": "settings.inputs.seed", "recorded": 1, "rerun": 2}] and doc["verdict"] == "differs"
    )


def test_a_config_timed_in_one_run_only_differs(tmp_path):
    a, b = _run(tmp_path / "a"), _run(tmp_path / "b")
    rows = pd.read_csv(a / "v1" / "bench.csv")
    rows.loc[2, "status"] = "failed"  # the recorded run's timing of one config failed; the rerun's did not
    rows.to_csv(a / "v1" / "bench.csv", index=False)
    doc = compare_runs(a, b, "v1", NO_FLOOR)
    assert doc["verdict"] == "differs" and doc["timing_status"] == [
        {"config": "M=1,N=512", "recorded": "failed", "rerun": "ok"}
    ]
    assert "  timing M=1,N=512: failed -> ok" in summary(doc)


def test_a_few_microsecond_class_within_the_noise_floor_reproduces(tmp_path):
    """+5% of a 2.4 us launch (0.12 us) is under noise_floor_us 0.25: the same; without the floor it differs."""
    a = _run(tmp_path / "a", gpu_us=(2.35, 2.35, 30.0))
    b = _run(tmp_path / "b", gpu_us=(2.47, 2.47, 30.0))
    assert compare_runs(a, b, "v1", Params())["verdict"] == "reproduces"
    assert compare_runs(a, b, "v1", NO_FLOOR)["verdict"] == "differs"


def test_a_rerun_within_three_standard_errors_of_nsight_computes_calls_reproduces():
    """-1.7% of a 48 us launch whose calls' means have 0.25 us errors is within 3 errors (2.2%)."""
    from kopt.loop.rerun import class_deltas

    def run(us, se):
        row = {"config_key": "k", "config_class": "A", "status": "ok", "median_us": us + 2, "gpu_us": us}
        return pd.DataFrame([{**row, "gpu_se_us": se}])

    assert class_deltas(run(47.99, 0.25), run(47.18, 0.25), NO_FLOOR)[0]["verdict"] == "same"
    assert class_deltas(run(47.99, None), run(47.18, 0.25), NO_FLOOR)[0]["verdict"] == "faster"
    assert (
        class_deltas(run(47.99, 0.25), run(47.18, 0.25), Params(noise_floor_us=0.0, noise_se_z=1.0))[0]["verdict"]
        == "faster"
    )
