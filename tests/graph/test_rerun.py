"""`kopt rerun vK` on the CPU: the version's gate, timing and profile rebuilt in a tree of its own
(reruns/<workspace>/vK-<n>/, the original never touched) and compared with the recorded run; the
recorded files rerun when the workspace changed since, and --current names the changed hash."""

import json
from pathlib import Path

import pytest

from kopt.cli import main as kopt
from tests.helpers import _tree, copy_tree

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def project(tmp_path_factory, softmax_graph):
    """The example's graph built to results/v1/compare.json: this test run's shared build
    (tests/conftest.py), copied, as the reruns write beside it and a test edits v1."""
    return copy_tree(softmax_graph("v1"), tmp_path_factory.mktemp("rerun"))


def _rerun(project: Path, monkeypatch, capfd, *args: str) -> tuple[int, str, dict | None]:
    monkeypatch.chdir(project)
    rc = kopt(["rerun", *args])
    out = capfd.readouterr()
    made = sorted((project / "reruns" / "softmax").glob(f"{args[0]}-*"), key=lambda p: int(p.name.split("-")[1]))
    doc = json.loads((made[-1] / "rerun.json").read_text()) if made and (made[-1] / "rerun.json").is_file() else None
    return rc, out.out + out.err, doc


def test_an_unchanged_rerun_reproduces_in_its_own_tree(project, monkeypatch, capfd):
    before = _tree(project / "results")
    rc, out, doc = _rerun(project, monkeypatch, capfd, "v1")
    assert rc == 0 and "v1: reproduces" in out, out
    assert doc["verdict"] == "reproduces" and doc["correctness"] == [] and doc["inputs"] == []
    assert doc["ran"] == "the workspace as it is now" and doc["rerun"].startswith("reruns/softmax/v1-1/results")
    assert "CPU-interpreter" in doc["timing_note"]
    assert (project / "reruns" / "softmax" / "v1-1" / "results" / "v1" / "profile" / "profile.json").is_file()
    assert _tree(project / "results") == before  # the original tree is never written


def test_a_changed_kernel_reruns_the_recorded_content_or_with_current_differs_naming_the_hash(
    project, monkeypatch, capfd
):
    k = project / "examples" / "softmax" / "kernels" / "v1.py"
    text = k.read_text()
    recorded = json.loads((project / "results" / "v1" / "correctness.json").read_text())["provenance"]["kernel_sha256"]
    try:
        k.write_text(text + "\n# changed since v1 was run\n")
        rc, out, doc = _rerun(project, monkeypatch, capfd, "v1")
        assert rc == 0 and "kernels/v1.py changed since; the rerun ran the recorded files" in out, out
        assert doc["verdict"] == "reproduces" and doc["inputs"] == []
        assert doc["workspace_changed_since"]["kernels/v1.py"]["recorded"] == recorded
        copy = Path(doc["rerun"]).parents[1] / "workspace" / "kernels" / "v1.py"
        assert (project / copy).read_text() == text
        rc, out, doc = _rerun(project, monkeypatch, capfd, "v1", "--current")
        assert rc == 1 and "v1: differs" in out, out
        changed = doc["workspace_changed_since"]["kernels/v1.py"]["now"]
        assert doc["inputs"] == [{"what": "kernel_sha256", "recorded": recorded, "rerun": changed}]
        assert f"inputs differ: kernel_sha256: {recorded} -> {changed}" in out
    finally:
        k.write_text(text)


def test_a_version_without_results_cannot_be_rerun(project, monkeypatch, capfd):
    rc, out, _ = _rerun(project, monkeypatch, capfd, "v3")
    assert rc == 2 and "results/v3/correctness.json: v3 has no results to rerun" in out
