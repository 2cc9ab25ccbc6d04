"""A target of kind command end to end on the CPU: versions as commits and a patch of a small git
repository, judged by its fixed benchmark command through the same graph (correctness from the
error columns, the time column, the fold, the reports with a commit column)."""

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from kopt.workspace.records import validate_tree
from tests.helpers import copy_project, snakemake

pytestmark = pytest.mark.e2e

# the repository's benchmark: one row per config; its error and time columns come from settings.py
BENCH = """import os, settings
os.makedirs("out", exist_ok=True)
with open("out/bench.csv", "w") as f:
    f.write("batch,seq_len,err_triton,us_triton,us_ref\\n")
    for seq in (4096, 32768):
        f.write(f"1,{seq},{settings.ERR},{settings.US * seq / 4096},{2 * seq / 4096}\\n")
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, us: float, err: float, message: str) -> str:
    (repo / "settings.py").write_text(f"US = {us}\nERR = {err}\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    dst = copy_project(tmp_path_factory.mktemp("command"))
    ws = dst / "attn"
    repo = ws / "repo"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.com")
    _git(repo, "config", "user.name", "t")
    (repo / "bench.py").write_text(BENCH)
    base = _commit(repo, 10.0, 0, "baseline")
    wrong = _commit(repo, 1.0, 0.5, "fast but wrong")
    target = {"kind": "command", "repository": "repo", "command": "python3 bench.py", "csv": "out/*.csv"}
    target.update(time_column="us_triton", class_by=["seq_len"], repeats=2, kernel="paged_attention")
    target["fixed_paths"] = ["bench.py"]  # the judge: every version gets v0's
    (ws / "target.yaml").write_text(yaml.safe_dump(target))
    k = ws / "kernels"
    k.mkdir()
    (k / "v0.yaml").write_text(f"commit: {base}\n")
    (k / "v1.diff").write_text(
        "--- a/settings.py\n+++ b/settings.py\n@@ -1,2 +1,2 @@\n-US = 10.0\n+US = 5.0\n ERR = 0\n"
    )
    meta = "hypothesis: h\nrationale: r\nexpected: e\n"
    (k / "v1.yaml").write_text(f"parent: v0\npatch: v1.diff\n{meta}")
    (k / "v2.yaml").write_text(f"parent: v1\ncommit: {wrong}\n{meta}")
    # a patch on the patched v1 that also rewrites the judge to report no error and 100x less time
    (k / "v3.diff").write_text(
        "--- a/bench.py\n+++ b/bench.py\n@@ -5,2 +5,2 @@\n     for seq in (4096, 32768):\n"
        '-        f.write(f"1,{seq},{settings.ERR},{settings.US * seq / 4096},{2 * seq / 4096}\\n")\n'
        '+        f.write(f"1,{seq},0,{settings.US * seq / 409600},{2 * seq / 4096}\\n")\n'
    )
    (k / "v3.yaml").write_text(f"parent: v1\npatch: v3.diff\n{meta}")
    p = snakemake(dst, "results/v3/compare.json", "results/performance.md", config=[f"workspace={ws}"])
    assert p.returncode == 0, p.stdout + p.stderr
    assert _git(repo, "status", "--porcelain") == "" and _git(repo, "rev-parse", "HEAD") == wrong  # untouched
    return dst


def test_each_version_is_built_at_its_commit_and_judged_by_the_command(project):
    res = project / "results"
    builds = [json.loads((res / v / "build" / "build.json").read_text()) for v in ("v0", "v1", "v2", "v3")]
    assert all(b["status"] == "ok" and len(b["commit"]) == 40 for b in builds)
    # a patch is committed on its parent's code: v3 (a patch on the patched v1) keeps v1's change
    assert (
        builds[1]["base_commit"] == builds[0]["commit"] != builds[1]["commit"] and len(builds[1]["patch_sha256"]) == 64
    )
    assert builds[3]["base_commit"] == builds[1]["commit"]
    assert "US = 5.0" in (res / "v3" / "build" / "worktree" / "settings.py").read_text()
    # ... and its rewrite of the judge is undone: bench.py is v0's in every worktree
    fixed = {b["fixed_sha256"]["bench.py"] for b in builds}
    assert len(fixed) == 1 and "409600" not in (res / "v3" / "build" / "worktree" / "bench.py").read_text()
    corr = [json.loads((res / v / "correctness.json").read_text()) for v in ("v0", "v1", "v2")]
    assert [c["status"] for c in corr] == ["pass", "pass", "incorrect"]
    assert corr[2]["error"] == "config batch=1,seq_len=4096: err_triton = 0.5 (over the tolerance 0)"
    bench = [json.loads((res / v / "bench.json").read_text()) for v in ("v0", "v1")]
    assert all(b["timing"]["repeats"] == 2 and b["provenance"]["commit"] for b in bench)


def test_the_fold_and_the_reports_take_the_commands_times(project):
    import pandas as pd

    res = project / "results"
    v0, v1 = (pd.read_csv(res / v / "bench.csv") for v in ("v0", "v1"))
    assert list(v0["median_us"]) == [10.0, 80.0] and list(v1["median_us"]) == [5.0, 40.0]
    assert set(v1["method"]) == {"cpu-command"} and list(v1["n_samples"]) == [2, 2]
    comps = [json.loads((res / v / "compare.json").read_text()) for v in ("v0", "v1", "v2")]
    assert [c["decision"] for c in comps] == ["baseline", "keep", "discard"]
    assert comps[1]["evidence"].startswith("cpu-interpreter: timings are not evidence")  # a CPU run teaches nothing
    assert comps[2]["reason"] == "incorrect" and comps[1]["provenance"]["commit"] != comps[0]["provenance"]["commit"]
    v3 = pd.read_csv(res / "v3" / "bench.csv")  # the judge's rewrite did not count: v1's times, a tie
    assert list(v3["median_us"]) == [5.0, 40.0]
    perf = (res / "performance.md").read_text()
    assert "| commit |" in perf and f"`{comps[1]['provenance']['commit'][:12]}`" in perf
    # its checks and times are the command's own CSV: the keep says so, and the report with it
    assert comps[1]["untrusted"].startswith("untrusted: a command target's outputs are checked")
    assert f"> - v1: {comps[1]['untrusted']}" in perf and "**Untrusted keeps**" in perf
    profile = json.loads((res / "v1" / "profile" / "profile.json").read_text())
    assert profile["status"] == "skipped" and "no GPU" in profile["error"]
    assert validate_tree(res) == []


def test_kopt_new_branches_the_next_attempt_from_the_best_versions_code(project):
    from kopt.cli import main as kopt
    from kopt.workspace.target import WorkspaceError, load_workspace

    ws, repo = project / "attn", project / "attn" / "repo"
    head = _git(repo, "rev-parse", "HEAD")
    assert kopt(["new", "--workspace", str(ws), "--results", str(project / "results")]) == 0
    # the best is v1, a patch on v0: the branch starts at the commit holding v0's code plus that patch
    assert "US = 5.0" in (ws / "attempts" / "v4" / "settings.py").read_text()
    assert _git(repo, "log", "-1", "--format=%s", "kopt/v4").startswith("kopt: v1.diff on ")
    assert "commit: kopt/v4" in (ws / "kernels" / "v4.yaml").read_text()
    w = load_workspace(ws)  # its metadata says TODO: a draft, which the graph skips
    assert w.drafts == ["v4"] and w.versions[-1].name == "v3"
    with pytest.raises(WorkspaceError, match=r"v4\.yaml: v4 is a draft"):
        w.version("v4")
    assert _git(repo, "rev-parse", "HEAD") == head and _git(repo, "status", "--porcelain") == ""
