"""kopt.workspace.recorded: a version's files kept by content, what changed since, and a copy of
the workspace with the recorded files put back."""

import json

from kopt.workspace.recorded import changed_since, materialize, packages, record
from kopt.workspace.records import Recorded


def _workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / "kernels").mkdir(parents=True)
    (ws / "ref.py").write_text("REF = 1\n")
    (ws / "kernels" / "v0.py").write_text("V0 = 1\n")
    (ws / "kernels" / "v1.py").write_text("V1 = 1\n")
    (ws / "kernels" / "v2.py").write_text("V2 = 1\n")
    (ws / "results").mkdir()  # a results tree inside the workspace is never copied
    return ws


def test_record_keeps_copies_hashes_and_every_package(tmp_path):
    ws = _workspace(tmp_path)
    m = record(tmp_path / "rec", ws, [ws / "ref.py", ws / "kernels" / "v1.py"])
    Recorded.model_validate(json.loads((tmp_path / "rec" / "manifest.json").read_text()))
    assert sorted(m["files"]) == ["kernels/v1.py", "ref.py"]
    assert (tmp_path / "rec" / "files" / "kernels" / "v1.py").read_text() == "V1 = 1\n"
    assert m["packages"] == packages() and m["packages"]["pydantic"]
    assert changed_since(tmp_path / "rec", ws) == {}


def test_a_changed_file_is_named_and_put_back_in_a_copy(tmp_path):
    ws = _workspace(tmp_path)
    m = record(tmp_path / "rec", ws, [ws / "ref.py", ws / "kernels" / "v1.py"])
    (ws / "kernels" / "v1.py").write_text("V1 = 2\n")
    (ws / "ref.py").unlink()
    changed = changed_since(tmp_path / "rec", ws)
    assert changed["kernels/v1.py"][0] == m["files"]["kernels/v1.py"] and changed["kernels/v1.py"][1] is not None
    assert changed["ref.py"] == (m["files"]["ref.py"], None)
    copy = materialize(tmp_path / "rec", ws, tmp_path / "copy", 1)
    assert (copy / "kernels" / "v1.py").read_text() == "V1 = 1\n" and (copy / "ref.py").read_text() == "REF = 1\n"
    assert (copy / "kernels" / "v0.py").read_text() == "V0 = 1\n"  # the earlier versions as they are now
    assert not (copy / "kernels" / "v2.py").exists()  # the later ones left out: they may not fit the old target
    assert not (copy / "results").exists()
    assert (ws / "kernels" / "v1.py").read_text() == "V1 = 2\n"  # the workspace is not touched


def test_a_file_outside_the_workspace_is_kept_aside_and_never_put_back(tmp_path):
    ws = _workspace(tmp_path)
    (tmp_path / "elsewhere.diff").write_text("--- a\n")
    m = record(tmp_path / "rec", ws, [ws / "ref.py", ws / "kernels" / ".." / ".." / "elsewhere.diff"])
    outside = [rel for rel in m["files"] if rel.startswith("_outside/")]
    assert len(outside) == 1 and outside[0].endswith("elsewhere.diff")
    assert changed_since(tmp_path / "rec", ws) == {}
    (tmp_path / "elsewhere.diff").write_text("--- b\n")
    assert list(changed_since(tmp_path / "rec", ws)) == outside
    copy = materialize(tmp_path / "rec", ws, tmp_path / "copy", 1)
    assert not (copy / "_outside").exists()
