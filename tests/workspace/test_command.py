"""A target of kind command: its spec from target.yaml, and each version's commit or patch."""

import subprocess

import pytest
import yaml

from kopt.workspace.command import load_spec, version_source
from kopt.workspace.target import WorkspaceError

TARGET = {
    "kind": "command",
    "repository": "repo",
    "command": "python bench.py",
    "csv": "out/*.csv",
    "time_column": "us_triton",
    "class_by": ["seq_len"],
}


@pytest.fixture
def ws(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path / "repo")], check=True)
    (tmp_path / "kernels").mkdir()
    return tmp_path


def test_the_spec_with_its_defaults(ws):
    spec = load_spec(dict(TARGET), ws / "target.yaml")
    assert spec.repository == (ws / "repo").resolve() and spec.repeats == 3 and spec.error_tolerance == 0
    assert spec.error_columns is None and spec.config_columns is None and spec.kernel is None


@pytest.mark.parametrize(
    "change, message",
    [
        ({"repository": "elsewhere"}, r"repository: .*elsewhere is not a git repository"),
        ({"command": ""}, r"command: '' should be non-empty"),
        ({"repeats": 0}, r"repeats: 0 is less than the minimum of 1"),
        ({"time_column": None}, r"time_column: None is not of type 'string'"),
        ({"seeds": 3}, r"Additional properties are not allowed \('seeds' was unexpected\)"),
    ],
)
def test_a_malformed_spec_is_one_line(ws, change, message):
    data = {**TARGET, **change}
    with pytest.raises(WorkspaceError, match=message) as e:
        load_spec(data, ws / "target.yaml")
    assert str(e.value).startswith(f"{ws / 'target.yaml'}: ")


def test_a_version_is_a_commit_or_a_patch_on_its_parent(ws):
    meta = ws / "kernels" / "v1.yaml"
    assert version_source({"commit": "main"}, ws / "kernels" / "v0.yaml", 0).commit == "main"
    (ws / "kernels" / "v1.diff").write_text("")
    src = version_source(yaml.safe_load("parent: v0\npatch: v1.diff"), meta, 1)
    assert src.patch == ws / "kernels" / "v1.diff" and src.parent == "v0" and src.commit is None
    for bad, message in [
        ({"parent": "v0"}, "give exactly one of commit"),
        ({"commit": "a", "patch": "v1.diff", "parent": "v0"}, "give exactly one of commit"),
        ({"patch": "v1.diff"}, "patch: needs a parent"),
        ({"patch": "v9.diff", "parent": "v0"}, "v9.diff is missing"),
    ]:
        with pytest.raises(WorkspaceError, match=message):
            version_source(bad, meta, 1)
