"""The kopt command: new, status, mask/unmask and the experience subcommands."""

import json
import shutil

import pytest

from kopt.cli import main as kopt
from kopt.workspace.target import WorkspaceError, load_workspace
from tests.helpers import ROOT


@pytest.fixture
def ws(tmp_path):
    dst = tmp_path / "softmax"
    shutil.copytree(ROOT / "examples" / "softmax", dst)
    return dst


def test_kopt_new_status_mask(ws, tmp_path, capsys):
    results = tmp_path / "results"
    assert kopt(["status", "--workspace", str(ws), "--results", str(results)]) == 0
    assert "no results yet" in capsys.readouterr().out
    assert kopt(["new", "--workspace", str(ws), "--results", str(results), "--from", "v1"]) == 0
    assert (ws / "kernels" / "v8.py").read_text() == (ws / "kernels" / "v1.py").read_text()
    with pytest.raises(WorkspaceError, match=r"v8\.yaml: hypothesis: required .*not TODO"):
        load_workspace(ws)
    (ws / "kernels" / "v8.yaml").unlink()
    (ws / "kernels" / "v8.py").unlink()
    assert kopt(["mask", "--workspace", str(ws), "v2"]) == 0
    assert load_workspace(ws).version("v2").masked
    assert kopt(["unmask", "--workspace", str(ws), "v2"]) == 0
    assert not load_workspace(ws).version("v2").masked
    (results / "v7").mkdir(parents=True)
    (results / "workspace.json").write_text(json.dumps({"workspace": str(ws)}))  # whose tree this is
    state = {"best": {"version": "v1", "medians": {}}, "consecutive_regressions": 2, "stop": False}
    (results / "v7" / "compare.json").write_text(json.dumps({"version": "v7", "best_after": "v1", "state": state}))
    kopt(["status", "--workspace", str(ws), "--results", str(results)])  # from the last comparison
    out = capsys.readouterr().out
    assert "best: v1  (state after v7)" in out and "consecutive regressions: 2" in out
    (results / "state.json").write_text(
        json.dumps({"after": "v7", "best": "v1", "stop": True, "stop_reason": "target reached"})
    )
    kopt(["status", "--workspace", str(ws), "--results", str(results)])
    out = capsys.readouterr().out
    assert "best: v1" in out and "STOP: target reached" in out
    assert kopt(["mask", "--workspace", str(ws), "v99"]) == 2  # a clear error, not a traceback
    assert "no version v99" in capsys.readouterr().err


def test_kopt_experience_commands(tmp_path, capsys):
    db = str(tmp_path / "e.sqlite")
    args = ["--kernel-type", "softmax", "--backend", "triton", "--chip", "H100", "--bottleneck", "memory-bound"]
    assert (
        kopt(
            [
                "experience",
                "--db",
                db,
                "add",
                *args,
                "--strategy",
                "vector-width",
                "--hypothesis",
                "float4",
                "--outcome",
                "keep",
            ]
        )
        == 0
    )
    assert kopt(["experience", "--db", db, "recommend", *args, "-n", "2"]) == 0
    out = capsys.readouterr().out
    assert "1. vector-width" in out and "1 kept of 1 tried" in out
    assert kopt(["experience", "--db", db, "stats"]) == 0 and '"entries": 1' in capsys.readouterr().out
    other = str(tmp_path / "other.sqlite")
    assert (
        kopt(
            [
                "experience",
                "--db",
                other,
                "add",
                *args,
                "--strategy",
                "fuse-passes",
                "--hypothesis",
                "one pass",
                "--outcome",
                "keep",
            ]
        )
        == 0
    )
    for cmd in (["list"], ["search", "float4"], ["merge", other]):
        assert kopt(["experience", "--db", db, *cmd]) == 0
    assert "merged 1 new entries" in capsys.readouterr().out
    assert kopt(["experience", "--db", db, "merge", db]) == 2  # into itself: refused with a message
    assert "into itself" in capsys.readouterr().err
