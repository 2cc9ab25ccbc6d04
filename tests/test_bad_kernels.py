"""Each way a kernel can misbehave is caught, named, and recorded as data (the step never raises).

These run on the CPU through the Triton interpreter (and on a GPU when one is present)."""

import json
import time
from pathlib import Path

import pandas as pd
import pytest

from kopt.steps.bench import bench
from kopt.steps.correctness import correctness

BAD = Path(__file__).parent / "fixtures" / "bad_kernels"


def run_version(tiny: Path, kernel: Path, params: dict, tmp: Path, hardware_json: str | None = None):
    """Correctness then bench of one kernel on a workspace; (correctness doc, bench.csv, out dir)."""
    out = tmp / "out"
    corr = correctness(
        version="v9",
        target=str(tiny / "target.yaml"),
        kernel=str(kernel),
        out_json=str(out / "correctness.json"),
        out_md=str(out / "correctness.md"),
        log=str(out / "correctness.log"),
        params=params,
    )
    df = bench(
        version="v9",
        target=str(tiny / "target.yaml"),
        kernel=str(kernel),
        correctness_json=str(out / "correctness.json"),
        out_csv=str(out / "bench.csv"),
        out_samples=str(out / "bench_samples.csv"),
        out_meta=str(out / "bench.json"),
        log=str(out / "bench.log"),
        params=params,
        hardware_json=hardware_json,
    )
    return corr, df, out


@pytest.mark.parametrize(
    "kernel, status, says",
    [
        ("wrong.py", "incorrect", "outside atol"),
        ("unwritten.py", "incorrect", "NaN where the reference is not (unwritten"),
        ("mutates_input.py", "incorrect", "modified its input(s) ['x']"),
        ("raises.py", "failed", "RuntimeError: boom: unsupported shape"),
        ("dies.py", "failed", "killed by SIGSEGV"),
        ("syntax_error.py", "failed", "syntax_error.py: line 1: SyntaxError"),
        ("no_entry.py", "failed", "defines no run_kernel"),
    ],
)
def test_broken_kernel_fails_the_gate(tiny, tmp_path, run_params, kernel, status, says):
    corr, df, out = run_version(tiny, BAD / kernel, run_params, tmp_path)
    assert corr["status"] == status
    assert says in corr["error"]
    md = (out / "correctness.md").read_text()
    assert ("FAIL" in md) and says.split(":")[0] in md
    # the gate: nothing is timed, every row says why
    assert set(df["status"]) == {"skipped"}
    assert df["median_us"].isna().all()
    assert df["error"].str.contains(f"correctness {status}").all()
    assert json.loads((out / "correctness.json").read_text())["status"] == status


def test_hang_is_killed_after_the_time_limit(tiny, tmp_path, run_params):
    params = {**run_params, "timeout_s": 3}
    t0 = time.monotonic()
    corr, df, _ = run_version(tiny, BAD / "hangs.py", params, tmp_path)
    assert corr["status"] == "failed"
    assert "timed out: no progress for 3 s in config M=" in corr["error"]
    assert time.monotonic() - t0 < 60
    failed = [c for c in corr["configs"] if c["result"] == "FAILED"]
    assert len(failed) == 1 and failed[0]["key"] in corr["error"]


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
