"""A command target's version in its own worktree, at a commit or with a patch committed on its
parent's code (the user's checkout untouched), and runs of the fixed command there."""

from pathlib import Path

import pytest

from kopt.steps.worktree import CommandError, make_worktree, run_command
from kopt.workspace.command import CommandSpec, Source
from tests.steps.conftest import git_out as _git


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
