"""A command target's version: its own worktree at a commit or with a patch on its parent's (the
user's checkout untouched), and runs of the fixed command there."""

import subprocess
from pathlib import Path

import pytest

from kopt.steps.command import CommandError, make_worktree, run_command
from kopt.workspace.command import CommandSpec, Source

BENCH = "import sys\nprint('seq_len,err_triton,us_triton')\nprint('4096,0,{us}')\n"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    r = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(r)], check=True)
    _git(r, "config", "user.email", "t@example.com")
    _git(r, "config", "user.name", "t")
    for us in (20, 10):
        (r / "bench.py").write_text(BENCH.format(us=us))
        _git(r, "add", "bench.py")
        _git(r, "commit", "-qm", f"{us} us")
    return r


def test_a_worktree_per_version_at_its_commit_and_the_checkout_untouched(repo, tmp_path):
    first = _git(repo, "rev-list", "--max-parents=0", "HEAD")
    built = make_worktree(repo, tmp_path / "v0", Source(first, None, None), None, Path("v0.yaml"))
    assert built["commit"] == first and "20" in (tmp_path / "v0" / "bench.py").read_text()
    again = make_worktree(repo, tmp_path / "v0", Source("HEAD", None, None), None, Path("v0.yaml"))  # rebuilt fresh
    assert again["commit"] == _git(repo, "rev-parse", "HEAD") and "10" in (tmp_path / "v0" / "bench.py").read_text()
    assert _git(repo, "status", "--porcelain") == "" and "10" in (repo / "bench.py").read_text()


def test_a_patch_applies_on_the_parents_commit_or_fails_in_one_line(repo, tmp_path):
    head = _git(repo, "rev-parse", "HEAD")
    patch = tmp_path / "v1.diff"
    patch.write_text(
        "--- a/bench.py\n+++ b/bench.py\n@@ -2,2 +2,2 @@\n print('seq_len,err_triton,us_triton')\n-print('4096,0,10')\n+print('4096,0,7')\n"
    )
    built = make_worktree(repo, tmp_path / "v1", Source(None, patch, "v0"), head, Path("v1.yaml"))
    assert built["base_commit"] == head != built["commit"] and len(built["patch_sha256"]) == 64
    assert "4096,0,7" in (tmp_path / "v1" / "bench.py").read_text() and "4096,0,10" in (repo / "bench.py").read_text()
    patch.write_text(patch.read_text().replace("4096,0,10", "4096,0,99"))
    with pytest.raises(CommandError, match=r"^v1\.yaml: git apply --whitespace=nowarn: error: patch failed"):
        make_worktree(repo, tmp_path / "v2", Source(None, patch, "v0"), head, Path("v1.yaml"))
    with pytest.raises(CommandError, match=r"^v3\.yaml: git rev-parse --verify: fatal: Needed a single revision"):
        make_worktree(repo, tmp_path / "v3", Source("no-such-ref", None, None), None, Path("v3.yaml"))


def test_the_command_runs_in_the_worktree_its_csv_is_found_and_a_hang_is_killed(repo, tmp_path):
    spec = CommandSpec(
        repo, "python3 bench.py > out.csv", "*.csv", "us_triton", ["seq_len"], None, 0.0, None, None, 1, [], "cuda"
    )
    make_worktree(repo, tmp_path / "wt", Source("HEAD", None, None), None, Path("v0.yaml"))
    run = run_command(spec, tmp_path / "wt", tmp_path / "log", timeout_s=60)
    assert run.exit_code == 0 and run.csv_files == [tmp_path / "wt" / "out.csv"]
    assert "4096,0,10" in run.csv_files[0].read_text()
    hang = CommandSpec(repo, "sleep 30", "*.csv", "us_triton", ["seq_len"], None, 0.0, None, None, 1, [], "cuda")
    killed = run_command(hang, tmp_path / "wt", tmp_path / "log", timeout_s=1)
    assert killed.exit_code is None and killed.csv_files == [] and killed.seconds < 10  # the old CSV went first


def test_the_deciding_clock_without_nvidia_tools_comes_from_rocprofv3s_kernel_trace(repo, tmp_path, monkeypatch):
    """A stand-in rocprofv3 on PATH (no AMD GPU here): it writes the hand-made kernel trace of
    tests/fixtures/profiles (two softmax_one_pass launches of 250 µs) and runs the command."""
    from kopt.steps.command import kernel_gpu_us
    from kopt.workspace.command import CommandSpec
    from tests.helpers import FIXTURES

    tools = tmp_path / "bin"
    tools.mkdir()
    fake = tools / "rocprofv3"
    trace = FIXTURES / "profiles" / "rocprofv3_kernel_trace.csv"
    fake.write_text(
        f'#!/bin/sh\nwhile [ "$1" != "--" ]; do [ "$1" = -d ] && d=$2; shift; done; shift\n'
        f'mkdir -p "$d" && cp {trace} "$d/kopt_kernel_trace.csv" && exec "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")
    spec = CommandSpec(
        repo, "python3 bench.py > out.csv", "*.csv", "us_triton", ["seq_len"], None, 0.0, None, "softmax", 1, [], "cuda"
    )
    make_worktree(repo, tmp_path / "wt", Source("HEAD", None, None), None, Path("v0.yaml"))
    ws = type("Ws", (), {"command": spec})()
    settings = {
        "ncu": "no-such-ncu",
        "rocprofv3": "rocprofv3",
        "timeout_s": 60,
        "gate": {"enabled": False},
        "device": "auto",
    }
    means, note = kernel_gpu_us(
        ws, {"worktree": str(tmp_path / "wt")}, settings, str(tmp_path / "log"), tmp_path / "raw"
    )
    assert means == {"*": 250.0} and note == "rocprofv3: mean GPU time per launch of /softmax/, over all configs"
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert kernel_gpu_us(ws, {"worktree": str(tmp_path / "wt")}, settings, str(tmp_path / "log"), tmp_path / "raw")[
        1
    ].startswith("no Nsight Compute or rocprofv3 here")


def test_launches_are_told_apart_by_their_kopt_class_ranges_and_a_row_takes_the_closest(tmp_path):
    from kopt.steps.command import _bench_row, _launches_by_class
    from tests.helpers import NVTX_PROBE

    csv = tmp_path / "ncu.csv"
    csv.write_text(NVTX_PROBE.read_text().replace(":class N=", ":kopt-class N="))  # the H100 probe's launches
    by = _launches_by_class(csv)
    assert sorted(by) == ["N=2048", "N=256"] and len(by["N=256"]) == 1 and len(by["N=2048"]) == 2
    rec = {"config": {"N": 256}, "key": "N=256,M=4", "class": "N=256", "ok": True, "reason": None}
    rec.update(times_us=[3.0, 5.0], median_us=4.0)
    assert _bench_row(rec, "cuda", "command", {"N=256,M=4": 1.0, "N=256": 2.0, "*": 3.0})["profiler_us"] == 1.0
    assert _bench_row(rec, "cuda", "command", {"N=256": 2.0, "*": 3.0})["profiler_us"] == 2.0
    assert _bench_row(rec, "cuda", "command", {"*": 3.0})["profiler_us"] == 3.0


def test_an_unreadable_csv_fails_the_version_in_one_line(repo, tmp_path):
    from kopt.steps.command import _judged

    spec = CommandSpec(
        repo, "printf '' > out.csv", "*.csv", "us_triton", ["seq_len"], None, 0.0, None, None, 1, [], "cuda"
    )
    make_worktree(repo, tmp_path / "wt", Source("HEAD", None, None), None, Path("v0.yaml"))
    ws = type("Ws", (), {"command": spec})()
    build = {"status": "ok", "worktree": str(tmp_path / "wt")}
    settings = {"timeout_s": 60, "gate": {"enabled": False}, "device": "auto"}
    records, err, _ = _judged(ws, "kernels/v0.yaml", build, settings, str(tmp_path / "log"), 1, tmp_path / "runs")
    assert records == [] and err.startswith("kernels/v0.yaml: the command's CSV is unreadable: ")
