"""The profile half of rule `measure` (kopt.steps.profile) on a stubbed child's outcome: every class
in one Nsight Compute process, told apart by NVTX ranges, and torch.profiler only when ncu fails."""

from tests.helpers import FIXTURES, NVTX_PROBE, ROOT


def _classes(names=("N=256", "N=2048")) -> list[dict]:
    return [{"class": c, "config": {}, "key": f"k{c}", "seeds": [1]} for c in names]


def _ok(names=("N=256", "N=2048")):
    from kopt.measure.runner import ChildOutcome

    return ChildOutcome(
        "ok", {"device": "cuda", "env": {"gpu": "H100"}, "classes": _classes(names), "triton": []}, gate={}
    )


def _ncu_installed(which):
    """shutil.which as on a machine with Nsight Compute (every other tool as it is here)."""
    return lambda tool: "/usr/local/cuda/bin/ncu" if tool == "ncu" else which(tool)


def _fake_torch_run(calls):
    """run_gated as the torch.profiler fallback calls it: recorded, then a passing child."""

    def run_gated(task, req, settings, *, timeout_s, log_path, wrapper=None):
        calls.append((task, wrapper, req.get("tool")))
        return _ok()

    return run_gated


def _plan(step, tiny, tmp_path, settings: dict, kernel=None, builds=None):
    """The profile of the tiny workspace's v0 (or ``kernel``), planned."""
    return step.plan_profile(
        version="v0",
        target=str(tiny / "target.yaml"),
        kernel=str(kernel or tiny / "kernels" / "v0.py"),
        out_dir=str(tmp_path / "p"),
        asm_dir=str(tmp_path / "a"),
        settings=settings,
        builds=builds or [],
    )


def _profile(step, tiny, tmp_path, settings: dict, outcome, csv_text=None, kernel=None, builds=None) -> dict:
    """The profile planned, then finished from the profile child's ``outcome`` (``csv_text``: what
    Nsight Compute wrote meanwhile)."""
    run = _plan(step, tiny, tmp_path, settings, kernel, builds)
    if csv_text is not None:
        (run.raw / "ncu_details.csv").write_text(csv_text)
    return step.finish_profile(run, outcome, str(tmp_path / "log"))


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
    monkeypatch.setattr(step, "detect_gpu", lambda device: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(step.shutil, "which", _ncu_installed(step.shutil.which))
    settings = {"profiler": "ncu", "calls": 5, "timeout_s": 20, "device": "auto"}
    v7 = ROOT / "examples" / "softmax" / "kernels" / "v7.cu"
    doc = _profile(step, tiny, tmp_path, settings, _ok(names), csv_text, v7, [str(build)])
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
    monkeypatch.setattr(step, "run_gated", _fake_torch_run(calls))
    monkeypatch.setattr(step, "detect_gpu", lambda device: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(step.shutil, "which", _ncu_installed(step.shutil.which))
    settings = {"profiler": "ncu", "calls": 5, "timeout_s": 20, "device": "auto"}
    run = _plan(step, tiny, tmp_path, settings)
    assert run.wrapper[0] == "ncu" and run.request["tool"] == "ncu"  # the one child runs under ncu
    assert run.wrapper[run.wrapper.index("--log-file") + 1] == str(run.raw / "ncu_details.csv")
    (run.raw / "ncu_details.csv").write_text(csv_text)
    doc = step.finish_profile(run, _ok(), str(tmp_path / "log"))
    assert calls == []  # no second child
    by = {c["class"]: c for c in doc["classes"]}
    assert by["N=256"]["ncu_launches"] == 1 and by["N=2048"]["ncu_launches"] == 2
    assert "sigmoid" in " ".join(k["name"] for k in by["N=2048"]["kernels"])
    assert doc["backend"] == "ncu" and doc["tool_note"] is None


def test_profile_falls_back_to_torch_only_when_ncu_fails(tiny, tmp_path, monkeypatch):
    from kopt.measure.runner import ChildOutcome
    from kopt.steps import profile as step

    calls = []
    monkeypatch.setattr(step, "run_gated", _fake_torch_run(calls))
    monkeypatch.setattr(step, "detect_gpu", lambda device: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(step.shutil, "which", _ncu_installed(step.shutil.which))
    crashed = ChildOutcome("crashed", error="==ERROR== ERR_NVGPUCTRPERM")
    doc = _profile(step, tiny, tmp_path, {"profiler": "ncu", "calls": 5, "timeout_s": 20}, crashed)
    assert calls == [("profile", None, None)]  # a second child, only because the tool failed: plain torch
    assert doc["backend"] == "torch" and "ERR_NVGPUCTRPERM" in doc["tool_note"]


def test_ncu_without_class_ranges_falls_back_and_says_why(tiny, tmp_path, monkeypatch):
    from kopt.steps import profile as step

    calls = []  # ncu ran to the end, but its CSV names no kopt-class range (the probe's own ranges)
    monkeypatch.setattr(step, "run_gated", _fake_torch_run(calls))
    monkeypatch.setattr(step, "detect_gpu", lambda device: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(step.shutil, "which", _ncu_installed(step.shutil.which))
    settings = {"profiler": "ncu", "calls": 5, "timeout_s": 20}
    doc = _profile(step, tiny, tmp_path, settings, _ok(), NVTX_PROBE.read_text())
    assert calls == [("profile", None, None)]
    assert doc["backend"] == "torch" and "no launch in the range of class(es) N=256, N=2048" in doc["tool_note"]


def test_a_kernel_that_fails_under_ncu_is_not_run_again(tiny, tmp_path, monkeypatch):
    from kopt.measure.runner import ChildOutcome
    from kopt.steps import profile as step

    calls = []
    monkeypatch.setattr(step, "run_gated", _fake_torch_run(calls))
    monkeypatch.setattr(step, "detect_gpu", lambda device: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(step.shutil, "which", _ncu_installed(step.shutil.which))
    hung = ChildOutcome("timeout", error="timed out: no progress for 20 s")
    doc = _profile(step, tiny, tmp_path, {"profiler": "ncu", "calls": 5, "timeout_s": 20}, hung)
    assert calls == [] and doc["status"] == "failed" and "timed out" in doc["error"]


def test_nsight_compute_configured_but_missing_gives_torch_figures_and_says_so(tiny, tmp_path, monkeypatch):
    from kopt.steps import profile as step

    monkeypatch.setattr(step, "detect_gpu", lambda device: "NVIDIA H100 80GB HBM3")
    monkeypatch.setattr(step.shutil, "which", lambda tool: None)
    settings = {"profiler": "ncu", "ncu": "/opt/nowhere/ncu", "calls": 5, "timeout_s": 20}
    run = _plan(step, tiny, tmp_path, settings)
    assert run.wrapper is None and "tool" not in run.request  # the child is not started under a missing tool
    doc = step.finish_profile(run, _ok(), str(tmp_path / "log"))
    assert doc["status"] == "ok" and doc["backend"] == "torch"
    assert doc["tool_note"] == "Nsight Compute (/opt/nowhere/ncu) not found; torch.profiler figures instead"
