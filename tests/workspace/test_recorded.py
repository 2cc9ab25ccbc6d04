"""kopt.workspace.recorded: a version's files kept by content, what changed since, and a copy of
the workspace with the recorded files put back."""

import json

from kopt.workspace.recorded import changed_since, materialize, packages, record
from kopt.workspace.records import Recorded


def _workspace(tmp_path):
    ws = tmp_path / "ws"
    (ws / "kernels").mkdir(parents=True)
    (ws / "ref.py").write_text("REF = 1\n")
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
    copy = materialize(tmp_path / "rec", ws, tmp_path / "copy")
    assert (copy / "kernels" / "v1.py").read_text() == "V1 = 1\n" and (copy / "ref.py").read_text() == "REF = 1\n"
    assert (copy / "kernels" / "v2.py").read_text() == "V2 = 1\n"  # the other versions as they are now
    assert not (copy / "results").exists()
    assert (ws / "kernels" / "v1.py").read_text() == "V1 = 2\n"  # the workspace is not touched
