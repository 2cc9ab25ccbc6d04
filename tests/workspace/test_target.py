"""The workspace loads, and a malformed one stops with one line naming the file and the field
(target.yaml, ref.py, kernels/vN.py and their metadata)."""

import shutil
from pathlib import Path

import pytest

from kopt.workspace.target import WorkspaceError, config_class, config_key, load_workspace
from tests.helpers import ROOT

EXAMPLE = ROOT / "examples" / "softmax"


@pytest.fixture
def ws(tmp_path) -> Path:
    dst = tmp_path / "ws"
    shutil.copytree(EXAMPLE, dst)
    return dst


def test_example_loads():
    w = load_workspace(EXAMPLE)
    assert [v.name for v in w.versions] == [f"v{i}" for i in range(8)]
    assert w.version("v5").repair_of == "v4" and w.version("v6").kind == "dispatch"
    assert w.version("v7").kind == "cuda" and w.version("v1").kind == "triton"
    assert w.classes(w.configs) == ["N=256", "N=2048", "N=16384"]
    assert w.version("v3").target_classes == ["N=256"] and w.version("v1").target_classes is None
    assert w.seeds == 3 and w.tolerance(w.configs[0]) == {"atol": 1e-6, "rtol": 1e-5}
    assert config_key(w.configs[0]) == "M=262144,N=256,dtype=float32"
    assert config_class(w.configs[0], ["N", "dtype"]) == "N=256,dtype=float32"


def _sub(path: Path, old: str, new: str):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    "edit, says",
    [
        (
            lambda w: _sub(w / "target.yaml", "M: 4096,", "M: [1, 2],"),
            "target.yaml: configs[4].M: [1, 2] is not of type",
        ),
        (
            lambda w: _sub(w / "target.yaml", "class_by: [N]", "class_by: []"),
            "target.yaml: class_by: [] should be non-empty",
        ),
        (
            lambda w: _sub(w / "target.yaml", "seeds: 3", "seeds: 1"),
            "target.yaml: seeds: 1 is less than the minimum of 3",
        ),
        (
            lambda w: _sub(w / "target.yaml", "dtype: float32}\n  - {M: 524288", "dtype: float64}\n  - {M: 524288"),
            "target.yaml: configs[0].dtype: no tolerance for dtype 'float64'",
        ),
        (
            lambda w: _sub(w / "target.yaml", "{M: 8, N: 2048", "{M: 8, K: 2048"),
            "target.yaml: cpu_configs[1]: lacks class_by column 'N'",
        ),
        (lambda w: _sub(w / "target.yaml", "tolerances:", "tolerances: ["), "target.yaml: line"),
        (
            lambda w: _sub(w / "target.yaml", "seeds: 3", "seeds: 3\nseed: 4"),
            "target.yaml: (top level): Additional properties",
        ),
        (
            lambda w: _sub(
                w / "target.yaml", "{M: 8, N: 2048, dtype: float32}", "{M: 8, N: 2048, dtype: float32, seed: 1}"
            ),
            "target.yaml: cpu_configs[1]: 'seed' cannot be a config column: kopt passes setup() a fresh seed",
        ),
        (lambda w: (w / "ref.py").unlink(), "ref.py: file is missing"),
        (lambda w: (w / "kernels" / "v2.py").unlink(), "kernels/v2.py: file is missing"),
        (lambda w: (w / "kernels" / "v1.yaml").unlink(), "kernels/v1.yaml: file is missing"),
        (
            lambda w: shutil.copy(w / "kernels" / "v1.py", w / "kernels" / "v9.py"),
            "kernels/v8.py: file is missing (versions must be numbered without gaps)",
        ),
        (
            lambda w: shutil.copy(w / "kernels" / "v1.py", w / "kernels" / "v7.py"),
            "kernels/v7.py: v7 has two kernel files (v7.cu, v7.py): keep one",
        ),
        (
            lambda w: shutil.copy(w / "kernels" / "v1.py", w / "kernels" / "v01.py"),
            "kernels/v01.py: not a version name",
        ),
        (
            lambda w: _sub(w / "kernels" / "v3.yaml", 'target_class: "N=256"', 'target_class: "N=255"'),
            "kernels/v3.yaml: target_class: 'N=255' is not a config class",
        ),
        (
            lambda w: _sub(w / "kernels" / "v2.yaml", "parent: v1", "parent: v7"),
            "kernels/v2.yaml: parent: v7 is not an earlier version",
        ),
        (
            lambda w: _sub(w / "kernels" / "v2.yaml", "parent: v1", "parent: v1\nhypothesys: typo"),
            "kernels/v2.yaml: (top level): Additional properties are not allowed ('hypothesys'",
        ),
        (
            lambda w: _sub(w / "kernels" / "v6.yaml", "N: [256]", "N: [255]"),
            "kernels/v6.yaml: dispatch[0].when: {'N': [255]} matches no config of target.yaml",
        ),
        (
            lambda w: _sub(
                w / "kernels" / "v2.yaml", "parent: v1", "parent: v1\noverride: {decision: keep, reason: sure}"
            ),
            "kernels/v2.yaml: override.reason: 'sure' is too short",
        ),
        (
            lambda w: _sub(
                w / "kernels" / "v2.yaml",
                "parent: v1",
                "parent: v1\noverride: {decision: maybe, reason: measured end to end}",
            ),
            "kernels/v2.yaml: override.decision: 'maybe' is not one of ['keep', 'discard']",
        ),
    ],
)
def test_malformed_workspace_names_file_and_field(ws, edit, says):
    edit(ws)
    with pytest.raises(WorkspaceError) as e:
        load_workspace(ws)
    msg = str(e.value)
    assert says in msg and "\n" not in msg
    assert msg.startswith(str(ws))


def test_missing_folder(tmp_path):
    with pytest.raises(WorkspaceError, match="workspace folder does not exist"):
        load_workspace(tmp_path / "nope")


# --- metadata checks ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "meta,msg",
    [
        ("parent: v1\nhypothesis: x\nrationale: y\n", r"v8\.yaml: expected: required"),
        ("parent: v1\nhypothesis: x\nrationale: y\nexpected: z\nrepair_of: v9\n", r"repair_of: v9 is not an earlier"),
        (
            "parent: v1\nhypothesis: x\nrationale: y\nexpected: z\n"
            "dispatch:\n  - {when: {N: [256]}, use: v3}\n  - {when: {N: [2048]}, use: v1}\n",
            r"dispatch\[1\]: the last entry is the default",
        ),
        (
            "parent: v1\nhypothesis: x\nrationale: y\nexpected: z\n"
            "dispatch:\n  - {when: {K: [256]}, use: v3}\n  - {use: v1}\n",
            r"dispatch\[0\]\.when: 'K' is not a config column",
        ),
    ],
)
def test_version_metadata_errors(ws, meta, msg):
    (ws / "kernels" / "v8.yaml").write_text(meta)
    if "dispatch" not in meta:
        shutil.copy(ws / "kernels" / "v1.py", ws / "kernels" / "v8.py")
    with pytest.raises(WorkspaceError, match=msg):
        load_workspace(ws)


def test_a_cuda_version_s_local_headers_are_among_its_files(tmp_path):
    """A .cu that includes "common.cuh" (which includes "sub/inner.cuh") is made from all three:
    a change to a header reruns and rebuilds the version, and `kopt rerun` restores them. System
    headers (<...>), a header that is not there (the compiler names it) and a cycle add nothing."""
    from kopt.workspace.target import kernel_files, local_headers

    k = tmp_path / "kernels"
    (k / "sub").mkdir(parents=True)
    (k / "v1.cu").write_text('#include <cuda_runtime.h>\n#include "common.cuh"\n  #  include "missing.cuh"\n')
    (k / "common.cuh").write_text('#pragma once\n#include "sub/inner.cuh"\n')
    (k / "sub" / "inner.cuh").write_text('#include "../common.cuh"\n')
    assert local_headers(k / "v1.cu") == [k / "common.cuh", k / "sub" / "inner.cuh"]
    assert kernel_files(k / "v1.cu") == [k / "common.cuh", k / "sub" / "inner.cuh", k / "v1.cu"]
    (k / "v2.py").write_text('# include "common.cuh"\n')
    assert kernel_files(k / "v2.py") == [k / "v2.py"]  # only CUDA/HIP sources are read for includes
