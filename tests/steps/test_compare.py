"""kopt.steps.compare: what one version's records become for the decision fold (a Candidate)."""

import json

import pandas as pd

from kopt.steps.compare import candidate


def _records(tmp_path, status="pass", error=None, rows=None):
    corr = tmp_path / "correctness.json"
    corr.write_text(json.dumps({"status": status, "error": error}))
    base = {"M": 8, "N": 256, "config_class": "N=256", "status": "ok", "method": "cuda-events", "error": None}
    df = pd.DataFrame(rows or [{**base, "config_key": "a", "median_us": 10.0, "profiler_us": 9.5}])
    return str(corr), df


def test_a_passing_version_carries_both_clocks_per_config(tmp_path):
    corr, df = _records(tmp_path)
    c = candidate("v1", corr, df, {"hypothesis": "fewer passes"}, "k.py")
    assert c.status == "ok" and c.medians == {"a": 10.0} and c.gpu_us == {"a": 9.5}
    assert c.class_of == {"a": "N=256"} and c.target_classes is None and c.evidence


def test_a_failed_benchmark_row_fails_a_correct_version(tmp_path):
    base = {"M": 8, "N": 256, "config_key": "a", "config_class": "N=256", "method": "cuda-events"}
    corr, df = _records(tmp_path, rows=[{**base, "status": "failed", "median_us": None, "error": "timed out"}])
    c = candidate("v1", corr, df, {}, "k.py")
    assert c.status == "failed" and c.reason == "timed out" and c.medians == {}


def test_interpreter_timings_are_not_evidence_and_a_gate_timeout_is_named(tmp_path):
    base = {"M": 8, "N": 256, "config_key": "a", "config_class": "N=256", "status": "ok", "error": None}
    corr, df = _records(tmp_path, rows=[{**base, "median_us": 5.0, "profiler_us": None, "method": "cpu-interpreter"}])
    assert not candidate("v1", corr, df, {"target_class": "N=256"}, "k.py").evidence
    corr, df = _records(tmp_path, status="failed", error="gate: no idle GPU after 3600 s")
    assert not candidate("v2", corr, df, {}, "k.py").gate_timeout, "a kernel's own fault text stopped the loop"
    doc = json.loads((tmp_path / "correctness.json").read_text())
    doc["provenance"] = {"gate": {"gate": "timeout", "why": "gate: no idle GPU after 3600 s"}}  # the judge's record
    (tmp_path / "correctness.json").write_text(json.dumps(doc))
    c = candidate("v2", corr, df, {}, "k.py")
    assert c.gate_timeout and c.status == "failed"


def test_a_fixed_seed_in_the_judges_settings_makes_the_candidate_predictable(tmp_path):
    """inputs.seed fixed: a schedule the kernel can compute ahead, read from the settings the judge
    recorded with its verdict (correctness.json's provenance), never from the version."""
    corr, df = _records(tmp_path)
    assert not candidate("v1", corr, df, {}, "k.py").predictable
    for seed, predictable in ((None, False), (7, True)):
        doc = json.loads((tmp_path / "correctness.json").read_text())
        doc["provenance"] = {"settings": {"inputs": {"seed": seed, "pool_sets": 32}}}
        (tmp_path / "correctness.json").write_text(json.dumps(doc))
        assert candidate("v1", corr, df, {}, "k.py").predictable is predictable


def test_nsight_computes_calls_and_the_machine_that_clocked_it_reach_the_fold(tmp_path):
    """The calls behind each standard error (bench.csv's gpu_calls: the noise rule's degrees of
    freedom) and the GPU and machine start the child recorded (correctness.json's provenance)."""
    base = {"M": 8, "N": 256, "config_class": "N=256", "status": "ok", "method": "cuda-events", "error": None}
    row = {**base, "config_key": "a", "median_us": 10.0, "clock": "ncu", "gpu_us": 9.5, "gpu_se_us": 0.1}
    corr, df = _records(tmp_path, rows=[{**row, "gpu_calls": 16}])
    doc = json.loads((tmp_path / "correctness.json").read_text())
    doc["provenance"] = {"env": {"machine": "GPU-1234 boot ab"}}
    (tmp_path / "correctness.json").write_text(json.dumps(doc))
    c = candidate("v1", corr, df, {}, "k.py")
    assert c.clock == "ncu" and c.gpu_se == {"a": 0.1} and c.gpu_n == {"a": 16.0} and c.machine == "GPU-1234 boot ab"
