"""Rule `profile` (kopt.steps.profile) with a stubbed child: every class in one Nsight Compute process,
told apart by NVTX ranges, and torch.profiler only when ncu fails."""

from pathlib import Path

from tests.helpers import FIXTURES, NVTX_PROBE, ROOT


def _fake_profiled_run(calls, csv_text, names=("N=256", "N=2048")):
    from kopt.measure.runner import ChildOutcome

    def run_gated(task, req, settings, *, timeout_s, log_path, wrapper=None):
        calls.append((task, wrapper, req.get("tool")))
        if wrapper:  # what ncu writes: the probe's launches, under kopt-class ranges
            Path(wrapper[wrapper.index("--log-file") + 1]).write_text(csv_text)
        classes = [{"class": c, "config": {}, "key": f"k{c}", "seeds": [1]} for c in names]
        return ChildOutcome("ok", {"device": "cuda", "env": {"gpu": "H100"}, "classes": classes, "triton": []}, gate={})

    return run_gated


def _profile(step, tiny, tmp_path, settings: dict, kernel: Path | None = None, builds=None) -> dict:
    """The profile step on the tiny workspace's v0 (or ``kernel``), after a passing correctness record."""
    import json

    corr = tmp_path / "correctness.json"
    corr.write_text(json.dumps({"status": "pass", "error": None}))
    out = {"out_dir": str(tmp_path / "p"), "asm_dir": str(tmp_path / "a"), "log": str(tmp_path / "log")}
    target, kernel = str(tiny / "target.yaml"), str(kernel or tiny / "kernels" / "v0.py")
    return step.profile(
        version="v0", target=target, kernel=kernel, correctness_json=str(corr), **out, settings=settings, builds=builds
    )


def test_a_cuda_version_joins_ptxas_resources_to_ncus_launches(tiny, tmp_path, monkeypatch):
    """The example's v7 on the H100 (2026-11-23): ncu's CSV of its profile, and its build record."""
    import json

    from kopt.steps import profile as step

    build = tmp_path / "build"
    build.mkdir()
    record = json.loads((FIXTURES / "build" / "h100_v7_build.json").read_text())
    for k in record["kernels"]:  # a spill count that only the right kernel's record carries
        k["n_spills"] = 7 if k["mangled"] == "_Z17softmax_warp_rowsILi2EEvPK6float4PS0_i" else 0
    (build / "build.json").write_text(json.dumps(record))
    (build / "v7.sass").write_text("code for sm_90a\n")
    csv_text = (FIXTURES / "profiles" / "h100_ncu_cuda_v7.csv").read_text()
    names = ("N=256", "N=2048", "N=16384")
    monkeypatch.setattr(step, "run_gated", _fake_profiled_run([], csv_text, names))
    monkeypatch.setattr(step, "detect_gpu", lambda device: "NVIDIA H100 80GB HBM3")
    settings = {"profiler": "ncu", "calls": 5, "timeout_s": 20, "device": "auto"}
    doc = _profile(step, tiny, tmp_path, settings, ROOT / "examples" / "softmax" / "kernels" / "v7.cu", [str(build)])
    assert doc["language"] == "cuda" and doc["asm_files"] == ["v7.sass"]
    assert len(doc["compiled"]) == len(json.loads((build / "build.json").read_text())["kernels"]) == 8
    by = {c["class"]: c for c in doc["classes"]}
    assert by["N=256"]["hottest"]["name"] == "void softmax_warp_rows<2>(const float4 *, float4 *, int)"
    assert by["N=16384"]["hottest"]["name"] == "void softmax_block_rows<1024, 4>(const float4 *, float4 *)"
    # ncu's registers and shared memory, ptxas's spills of the same kernel (c++filt spells it differently)
    assert by["N=256"]["resources"] == {
        "registers_per_thread": 28.0,
        "spills": 7,
        "shared_memory_bytes": 0.0,
        "warps": 8.0,
        "stages": None,
    }
    assert by["N=16384"]["resources"]["registers_per_thread"] == 32.0 and by["N=16384"]["resources"]["spills"] == 0


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


def test_the_profiles_child_records_where_its_time_went(tiny, tmp_path, run_params):
    """The real child on the CPU: the provenance's timeline has the child's start-up (ready), each
    class's start, the compiled kernels' metadata and the end, in seconds from the child's start."""
    from kopt.steps import profile as step

    doc = _profile(step, tiny, tmp_path, {**run_params, "profiler": "auto", "calls": 2, "device": "cpu"})
    assert doc["status"] == "ok", doc["error"]
    t = doc["provenance"]["child_timeline"]
    assert list(t) == ["ready", "class N=64", "class N=512", "metadata", "end"]  # the CPU configs' classes
    assert 0 < t["ready"] <= t["class N=64"] <= t["class N=512"] <= t["metadata"] <= t["end"]
