"""Issue 10, item 1: one results tree per workspace, results reused only when their recorded
provenance matches, -d DIR, and commands printed complete for the workspace in use. Through
Snakemake on a copy of the project (the pieces alone: tests/workspace)."""

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from kopt.cli import main as kopt
from tests.helpers import _sha, _tree, copy_project, copy_tree, snakemake

pytestmark = pytest.mark.e2e


def _second_workspace(project: Path) -> Path:
    """examples/softmax_b: the softmax target under another name and with other CPU shapes."""
    b = project / "examples" / "softmax_b"
    shutil.copytree(project / "examples" / "softmax", b)
    t = b / "target.yaml"
    text = t.read_text()
    assert "name: softmax" in text and "M: 20" in text
    t.write_text(text.replace("name: softmax", "name: softmax_b").replace("M: 20", "M: 24"))
    for k in b.glob("kernels/v*"):
        if k.stem != "v0":
            k.unlink()
    return b


def test_two_workspaces_in_one_project_never_mix(tmp_path, monkeypatch, capsys, softmax_graph):
    dst = copy_tree(softmax_graph("v0"), tmp_path)  # A's graph to v0: this test run's shared build, copied
    b = _second_workspace(dst)
    p = snakemake(dst, "results/v0/compare.json")
    assert p.returncode == 0, p.stdout + p.stderr
    before = _tree(dst / "results")
    for extra in ((), ("--rerun-triggers", "mtime")):  # mtime: what let B reuse A's results before
        p = snakemake(dst, "results/v0/compare.json", *extra, config=["workspace=examples/softmax_b"])
        out = p.stdout + p.stderr
        assert p.returncode != 0
        assert "kopt: results/ holds the results of workspace examples/softmax (results/workspace.json), not" in out
        # the hint is complete: the --config values of this run come with it
        assert "snakemake -d runs/softmax_b --cores 1 <targets> --config workspace=examples/softmax_b device=cpu" in out
    assert _tree(dst / "results") == before  # refused: nothing overwritten, nothing mixed

    # isolated: B in its own folder (-d), its workspace found from the workflow's folder
    p = snakemake(dst, "-d", "runs/b", "results/v0/compare.json", config=["workspace=examples/softmax_b"])
    assert p.returncode == 0, p.stdout + p.stderr
    a = json.loads((dst / "results" / "v0" / "correctness.json").read_text())["provenance"]
    bb = json.loads((dst / "runs" / "b" / "results" / "v0" / "correctness.json").read_text())["provenance"]
    assert a["target_sha256"] == _sha(dst / "examples" / "softmax" / "target.yaml")
    assert bb["target_sha256"] == _sha(b / "target.yaml") != a["target_sha256"]
    assert json.loads((dst / "runs" / "b" / "results" / "workspace.json").read_text())["workspace"] == str(b.resolve())
    assert _tree(dst / "results") == before

    # kopt refuses the wrong tree too, and prints commands complete for the workspace in use
    monkeypatch.chdir(dst)
    assert kopt(["status", "--workspace", "examples/softmax_b"]) == 2
    assert "holds the results of workspace examples/softmax" in capsys.readouterr().err
    assert kopt(["new", "--workspace", "examples/softmax_b"]) == 2
    assert not (b / "kernels" / "v1.py").exists()
    assert kopt(["status", "--workspace", "examples/softmax_b", "--results", "runs/b/results"]) == 0
    assert "next: kopt new --workspace examples/softmax_b --results runs/b/results" in capsys.readouterr().out
    assert kopt(["new", "--workspace", "examples/softmax_b", "--results", "runs/b/results"]) == 0
    hint = "snakemake -d runs/b --cores 1 results/v1/compare.json --config workspace=examples/softmax_b"
    assert hint in capsys.readouterr().out


def test_a_copied_project_keeps_its_results(tmp_path, softmax_graph):
    """A project copied or moved with its results (modification times kept, as cp -p or rsync -t
    keep them) is up to date: no rule's input is recorded by its absolute path (the GPU registry's
    were, and every version ran again). The shared builds of tests/conftest.py rest on it."""
    dst = copy_tree(softmax_graph("v1"), tmp_path)
    p = snakemake(dst, "results/v1/compare.json")
    assert p.returncode == 0 and "Nothing to be done" in p.stdout + p.stderr, p.stdout + p.stderr


def test_a_result_kept_by_its_age_but_made_from_other_files_is_rebuilt(tmp_path, softmax_graph):
    """A kernel copied with its old modification time: Snakemake would keep its results. v0 lies
    below the requested target and its results exist (where Snakemake ignores an input function's
    error), and --rerun-triggers mtime, without .snakemake's records, sees no other change."""
    dst = copy_tree(softmax_graph("v1"), tmp_path)  # this test run's shared build, copied
    assert snakemake(dst, "results/v1/compare.json").returncode == 0
    shutil.rmtree(dst / ".snakemake" / "metadata")
    k = dst / "examples" / "softmax" / "kernels" / "v0.py"
    st = k.stat()
    k.write_text(k.read_text() + "\n# changed, then given its old time back (cp -p, tar, rsync -t)\n")
    os.utime(k, ns=(st.st_atime_ns, st.st_mtime_ns))
    p = snakemake(dst, "results/v1/compare.json", "--rerun-triggers", "mtime")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert (
        "kopt: results/v0/correctness.json was made from another examples/softmax/kernels/v0.py (sha256 " in out
        and "it will be rebuilt, with everything made from it" in out
    )
    for made in ("correctness", "compare"):
        prov = json.loads((dst / "results" / "v0" / f"{made}.json").read_text())["provenance"]
        assert prov["kernel_sha256"] == _sha(k)
    # v1 was decided again, against the new v0's timings
    v0 = pd.read_csv(dst / "results" / "v0" / "bench.csv").set_index("config_class")["median_us"]
    best = {
        c["class"]: c["best_us"] for c in json.loads((dst / "results" / "v1" / "compare.json").read_text())["per_class"]
    }
    assert best.keys() == set(v0.index) and all(best[c] == pytest.approx(v0[c], rel=1e-9) for c in best)
    p = snakemake(dst, "results/v1/compare.json", "--rerun-triggers", "mtime")
    assert "Nothing to be done" in p.stdout + p.stderr and "kopt:" not in p.stdout + p.stderr


def test_d_dir_puts_results_there(tmp_path):
    (tmp_path / "project").mkdir()
    dst = copy_project(tmp_path / "project")
    p = snakemake(dst, "-d", str(tmp_path / "elsewhere"), "results/v0/compare.json")
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "elsewhere" / "results" / "v0" / "compare.json").is_file()
    assert not (dst / "results").exists()
