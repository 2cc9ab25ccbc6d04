"""The bundled GEMM example (examples/gemm): every version passes the correctness gate on its CPU
configs through the Triton interpreter (float16 there: the interpreter's bf16 dots are wrong), so
a broken example kernel shows in CI, not on the GPU machine. Its whole CPU graph (v0..v3 with the
reports) took 60 s on this 2-core machine."""

import pytest

from kopt.steps.bench import check_then_time
from kopt.workspace.target import load_workspace
from tests.helpers import ROOT

pytestmark = pytest.mark.e2e
GEMM = ROOT / "examples" / "gemm"


@pytest.mark.parametrize("version", [v.name for v in load_workspace(GEMM).versions])
def test_every_gemm_version_is_correct_on_the_cpu(version, tmp_path, run_params):
    kernel = load_workspace(GEMM).version(version).kernel
    params = {**run_params, "device": "cpu"}
    doc, _ = check_then_time(
        tmp_path, version=version, target=str(GEMM / "target.yaml"), kernel=str(kernel), log=str(tmp_path / "log"),
        params=params, time=False,
    )  # fmt: skip
    assert doc["status"] == "pass", doc["error"]
    assert [c["class"] for c in doc["configs"]] == ["shape=square", "shape=tall", "shape=small_k"]
