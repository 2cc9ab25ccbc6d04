"""Kernels that cheat (tests/fixtures/bad_kernels) never come out as correct and faster: a patched
timer or a background thread (kopt.measure.device's Guard), a result replayed on seen inputs
(kopt.measure.inputs: fresh values every call), an expected output searched for in the process (the
reference is computed after the call, out of reach: issue 16), and work moved to the host (a keep
needs both clocks). On the CPU through the Triton interpreter; tests/gpu has the GPU-only ones."""

from pathlib import Path

import pandas as pd
import pytest
import torch

from kopt.loop import decide as dec
from kopt.measure.variants import import_file
from kopt.steps.compare import candidate
from tests.helpers import BAD, ROOT, run_version

GEMM = ROOT / "examples" / "kernelbench" / "gemm_add_relu"


@pytest.mark.parametrize(
    "kernel, says",
    [
        ("patches_timer.py", ["the kernel replaced"]),
        # every call gets fresh values: a cache keyed on buffers replays a stale result
        ("caches_by_buffer.py", ["wrong or unwritten", "outside atol"]),
        # caught by the thread check, or by the poisoned outputs still being NaN
        ("background_thread.py", ["background thread", "NaN where the reference is not", "wrong or unwritten"]),
    ],
)
def test_cheating_kernel_is_never_timed_as_fast(tiny, tmp_path, run_params, kernel, says):
    """A cheat may slip through one check, but never comes out of correctness+bench as 'ok'."""
    corr, df, _ = run_version(tiny, BAD / kernel, run_params, tmp_path)
    errors = " ".join([str(corr["error"])] + [str(e) for e in df["error"]])
    assert not (corr["status"] == "pass" and (df["status"] == "ok").all()), errors
    assert df["median_us"].isna().all() or (df["status"] == "failed").all()
    assert any(s in errors for s in says), errors


# keyed on tensor versions: the judge refills the buffers from its own process, so the kernel's
# views never change version; the replayed product is stale and fails the check
@pytest.mark.parametrize("kernel", ["gemm_replay_pointers.py", "gemm_replay_identity.py"])
def test_replay_keyed_on_buffers_is_caught(tmp_path, run_params, monkeypatch, kernel):
    """It replays on buffers it has seen, but those now hold fresh values: the stale product fails."""
    log = tmp_path / "replays.txt"
    monkeypatch.setenv("KOPT_TEST_REPLAY_LOG", str(log))
    monkeypatch.setenv("KOPT_KERNEL_WRITABLE", str(log.parent))  # the sandbox lets the fixture log there
    corr, df, _ = run_version(GEMM, BAD / kernel, run_params, tmp_path)
    errors = " ".join([str(corr["error"])] + [str(e) for e in df["error"]])
    assert log.is_file() and log.read_text().strip(), "the fixture never replayed: the test proves nothing"
    assert not (corr["status"] == "pass" and (df["status"] == "ok").all()), errors
    assert "outside atol" in errors or "wrong or unwritten" in errors, errors


@pytest.mark.parametrize("kernel", ["gemm_replay_content.py"])
def test_replay_keyed_on_content_or_version_never_replays(tmp_path, run_params, monkeypatch, kernel):
    """Keyed on sampled values (the issue's exploit), it never finds a match:
    every timed call did the honest work, so its time is honest."""
    log = tmp_path / "replays.txt"
    monkeypatch.setenv("KOPT_TEST_REPLAY_LOG", str(log))
    monkeypatch.setenv("KOPT_KERNEL_WRITABLE", str(log.parent))  # the sandbox lets the fixture log there
    corr, df, out = run_version(GEMM, BAD / kernel, run_params, tmp_path)
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), [corr["error"]] + df["error"].tolist()
    assert not log.exists(), f"replayed {len(log.read_text().split())} call(s)"
    samples = pd.read_csv(out / "bench_samples.csv")
    assert samples["seed"].nunique() == len(samples)  # every timed call had inputs of its own


@pytest.mark.parametrize("kernel", ["finds_expected_via_gc.py", "lands_on_freed_reference.py"])
def test_expected_outputs_are_nowhere_in_the_kernels_process(tiny, tmp_path, run_params, monkeypatch, kernel):
    """The reference of a call is computed only after it (and scrubbed): a kernel that searches its
    process (live objects, callers' frames, freed allocator blocks) for the expected output finds
    none in any phase, and what it copies instead (another input set's output) fails."""
    log = tmp_path / "spy.txt"
    monkeypatch.setenv("KOPT_TEST_SPY_LOG", str(log))
    monkeypatch.setenv("KOPT_KERNEL_WRITABLE", str(log.parent))  # the sandbox lets the fixture log there
    corr, df, _ = run_version(tiny, BAD / kernel, run_params, tmp_path)
    lines = log.read_text().splitlines()
    assert lines, "the fixture never ran: the test proves nothing"
    assert not [ln for ln in lines if "expected_present=True" in ln], lines
    kept = corr["status"] == "pass" and (df["status"] == "ok").all()
    copied = any("copied=True" in ln for ln in lines)
    if kernel == "finds_expected_via_gc.py":  # the other input sets' outputs are always there to find
        assert copied, "it found nothing to copy: the test proves nothing"
    if copied:  # (the allocator's reuse of freed host memory varies between runs)
        errors = " ".join([str(corr["error"])] + [str(e) for e in df["error"]])
        assert not kept and ("output 'y'" in errors or "wrong or unwritten" in errors), errors


def test_a_kernel_process_forked_from_the_judge_holds_nothing_of_its_request(tiny, tmp_path, run_params, monkeypatch):
    """Without a GPU the kernel's process is forked from the judge, torch imported once for both
    (kopt.measure.spare): before the judge read its request, so a kernel that walks its live objects
    and its callers' frames finds none of it, and a version forked so passes as one started afresh."""
    log = tmp_path / "spy.txt"
    monkeypatch.setenv("KOPT_TEST_SPY_LOG", str(log))
    monkeypatch.setenv("KOPT_KERNEL_WRITABLE", str(log.parent))  # the sandbox lets the fixture log there
    corr, df, _ = run_version(tiny, BAD / "finds_the_request.py", run_params, tmp_path)
    lines = log.read_text().splitlines()
    assert lines and corr["status"] == "pass" and (df["status"] == "ok").all(), corr["error"]
    assert all("request_present=False" in ln for ln in lines), lines
    assert all("forked=True" in ln for ln in lines), "not forked: the test proves nothing here"


def test_the_request_walker_finds_a_request_that_is_there():
    """The control: a request held in a caller's frame is found, so the test above proves the spare holds none."""
    walker = import_file(BAD / "finds_the_request.py", "request_walker")
    req = {"configs_by_device": {}}  # noqa: F841 - found through this frame's locals
    assert walker.request_found()


def test_the_gc_walker_finds_an_expected_output_that_is_there(tmp_path, monkeypatch):
    """The control: held where the walker looks (a caller's local), the expected output is found and
    copied, so the test above proves the harness holds none."""
    log = tmp_path / "spy.txt"
    monkeypatch.setenv("KOPT_TEST_SPY_LOG", str(log))
    monkeypatch.setenv("KOPT_KERNEL_WRITABLE", str(log.parent))  # the sandbox lets the fixture log there
    walker = import_file(BAD / "finds_expected_via_gc.py", "gc_walker")
    x = torch.randn(4, 64)
    held = torch.softmax(x, dim=-1)  # noqa: F841 - found through this frame's locals
    y = torch.full_like(x, float("nan"))
    walker.run_kernel(x, y)
    assert "expected_present=True" in log.read_text() and torch.allclose(y, held)


def _candidate(version: str, out: Path, df, gpu_scale: float | None, tiny: Path) -> dec.Candidate:
    if gpu_scale is not None:  # a stub profiler: the GPU time the CPU cannot measure, on a GPU's clock
        df = df.assign(profiler_us=df["median_us"] * gpu_scale, clock="in-process")
    c = candidate(version, str(out / "correctness.json"), df, {}, str(tiny / "kernels" / f"{version}.py"))
    c.evidence, c.interpreter = True, False  # taken as a GPU's figures: the interpreter's decide nothing
    return c


def test_work_moved_to_the_host_is_disputed_not_kept(tiny, tmp_path, run_params):
    """The GPU time drops (stub profiler: 5% under the baseline's) while the call gets slower on the
    script's clock: the class is disputed and the version is not kept."""
    _, base_df, base_out = run_version(tiny, tiny / "kernels" / "v0.py", run_params, tmp_path / "v0")
    corr, host_df, host_out = run_version(tiny, BAD / "shifts_work_to_host.py", run_params, tmp_path / "v1")
    assert corr["status"] == "pass" and (host_df["status"] == "ok").all()
    base = _candidate("v0", base_out, base_df, 1.0, tiny)
    shifted = _candidate("v1", host_out, host_df, None, tiny)
    shifted.gpu_us, shifted.clock = {k: base.gpu_us[k] * 0.95 for k in base.gpu_us}, base.clock
    comps, state = dec.fold([base, shifted], dec.Params())
    c = comps[1]
    assert c["decision"] == "discard" and c["reason"] == "disputed", c
    assert {r["verdict"] for r in c["per_class"]} == {"disputed"}
    assert all(r["clocks"] == {"gpu_time": "improved", "script": "regressed"} for r in c["per_class"])
    assert "a keep needs both clocks" in c["per_class"][0]["note"]
    assert state["best"]["version"] == "v0"


def test_a_thread_pool_the_call_waits_for_is_no_background_thread(tiny, tmp_path, run_params):
    """gpu-mode's sort (v2): its torch.compile submission keeps a pool's worker threads between
    calls; a kernel whose pool does its work inside the call passes, while a thread left working
    (background_thread.py above) still fails."""
    corr, df, _ = run_version(tiny, BAD / "thread_pool.py", run_params, tmp_path)
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), (corr["error"], df["error"].tolist())
