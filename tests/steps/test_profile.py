"""Rule `profile` (kopt.steps.profile) with a stubbed child: every class in one Nsight Compute process,
told apart by NVTX ranges, and torch.profiler only when ncu fails."""

from pathlib import Path

from tests.helpers import NVTX_PROBE


def _fake_profiled_run(calls, csv_text):
    from kopt.measure.runner import ChildOutcome

    def run_gated(task, req, settings, *, timeout_s, log_path, wrapper=None):
        calls.append((task, wrapper, req.get("tool")))
        if wrapper:  # what ncu writes: the probe's launches, under kopt-class ranges
            Path(wrapper[wrapper.index("--log-file") + 1]).write_text(csv_text)
        classes = [{"class": c, "config": {}, "key": f"k{c}", "seeds": [1]} for c in ("N=256", "N=2048")]
        return ChildOutcome("ok", {"device": "cuda", "env": {"gpu": "H100"}, "classes": classes, "triton": []}, gate={})

    return run_gated


def _profile(step, tiny, tmp_path, settings: dict) -> dict:
    """The profile step on the tiny workspace's v0, after a passing correctness record."""
    import json

    corr = tmp_path / "correctness.json"
    corr.write_text(json.dumps({"status": "pass", "error": None}))
    out = {"out_dir": str(tmp_path / "p"), "asm_dir": str(tmp_path / "a"), "log": str(tmp_path / "log")}
    target, kernel = str(tiny / "target.yaml"), str(tiny / "kernels" / "v0.py")
    return step.profile(
        version="v0", target=target, kernel=kernel, correctness_json=str(corr), **out, settings=settings
    )


def test_profile_runs_every_class_in_one_ncu_process(tiny, tmp_path, monkeypatch):

    from kopt.steps import profile as step

    calls = []
    csv_text = NVTX_PROBE.read_text().replace(":class N=", ":kopt-class N=")
    monkeypatch.setattr(step, "run_gated", _fake_profiled_run(calls, csv_text))
    monkeypatch.setattr(step, "detect_gpu", lambda device: "NVIDIA H100 80GB HBM3")
    doc = _profile(step, tiny, tmp_path, {"profiler": "ncu", "calls": 5, "timeout_s": 20, "device": "auto"})
    assert [(t, w[0], tool) for t, w, tool in calls] == [("profile", "ncu", "ncu")]  # one child, under ncu
    by = {c["class"]: c for c in doc["classes"]}
    assert by["N=256"]["ncu_launches"] == 1 and by["N=2048"]["ncu_launches"] == 2
    assert "sigmoid" in " ".join(k["name"] for k in by["N=2048"]["kernels"])
    assert doc["backend"] == "ncu" and doc["tool_note"] is None


def test_profile_falls_back_to_torch_only_when_ncu_fails(tiny, tmp_path, monkeypatch):

    from kopt.measure.runner import ChildOutcome
    from kopt.steps import profile as step

    calls = []
    ok = _fake_profiled_run(calls, "")

    def run_gated(task, req, settings, *, timeout_s, log_path, wrapper=None):
        if wrapper:
            calls.append((task, wrapper, req.get("tool")))
            return ChildOutcome("crashed", error="==ERROR== ERR_NVGPUCTRPERM")
        return ok(task, req, settings, timeout_s=timeout_s, log_path=log_path)

    monkeypatch.setattr(step, "run_gated", run_gated)
    monkeypatch.setattr(step, "detect_gpu", lambda device: "NVIDIA H100 80GB HBM3")
    doc = _profile(step, tiny, tmp_path, {"profiler": "ncu", "calls": 5, "timeout_s": 20})
    assert len(calls) == 2 and calls[1][1] is None  # the second run only because the tool failed
    assert doc["backend"] == "torch" and "ERR_NVGPUCTRPERM" in doc["tool_note"]


def test_ncu_without_class_ranges_falls_back_and_says_why(tiny, tmp_path, monkeypatch):
    from kopt.steps import profile as step

    calls = []  # ncu ran to the end, but its CSV names no kopt-class range (the probe's own ranges)
    monkeypatch.setattr(step, "run_gated", _fake_profiled_run(calls, NVTX_PROBE.read_text()))
    monkeypatch.setattr(step, "detect_gpu", lambda device: "NVIDIA H100 80GB HBM3")
    doc = _profile(step, tiny, tmp_path, {"profiler": "ncu", "calls": 5, "timeout_s": 20})
    assert [w is None for _, w, _ in calls] == [False, True]
    assert doc["backend"] == "torch" and "no launch in the range of class(es) N=256, N=2048" in doc["tool_note"]


def test_a_kernel_that_fails_under_ncu_is_not_run_again(tiny, tmp_path, monkeypatch):
    from kopt.measure.runner import ChildOutcome
    from kopt.steps import profile as step

    calls = []

    def run_gated(task, req, settings, *, timeout_s, log_path, wrapper=None):
        calls.append(wrapper)
        return ChildOutcome("timeout", error="timed out: no progress for 20 s")

    monkeypatch.setattr(step, "run_gated", run_gated)
    monkeypatch.setattr(step, "detect_gpu", lambda device: "NVIDIA H100 80GB HBM3")
    doc = _profile(step, tiny, tmp_path, {"profiler": "ncu", "calls": 5, "timeout_s": 20})
    assert len(calls) == 1 and doc["status"] == "failed" and "timed out" in doc["error"]
