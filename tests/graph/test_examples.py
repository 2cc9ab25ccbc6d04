"""The bundled GEMM and decode-attention examples: every version passes the correctness gate on
its CPU configs through the Triton interpreter, so a broken example kernel shows in CI, not on the
GPU machine (GEMM runs float16 there: the interpreter's bf16 dots are wrong). The GEMM example's
whole CPU graph (v0..v3 with the reports) took 60 s on this 2-core machine."""

import pytest

from kopt.steps.bench import check_then_time
from kopt.workspace.target import load_workspace
from tests.helpers import ROOT

pytestmark = pytest.mark.e2e
EXAMPLES = {
    "gemm": ["shape=square", "shape=tall", "shape=small_k"],
    "decode_attention": ["context=short", "context=medium", "context=long"],
}
CASES = [(name, v.name) for name in EXAMPLES for v in load_workspace(ROOT / "examples" / name).versions]


@pytest.mark.parametrize(("example", "version"), CASES)
def test_every_example_version_is_correct_on_the_cpu(example, version, tmp_path, run_params):
    ws = ROOT / "examples" / example
    kernel = load_workspace(ws).version(version).kernel
    doc, _ = check_then_time(
        tmp_path, version=version, target=str(ws / "target.yaml"), kernel=str(kernel), log=str(tmp_path / "log"),
        params={**run_params, "device": "cpu"}, time=False,
    )  # fmt: skip
    assert doc["status"] == "pass", doc["error"]
    assert [c["class"] for c in doc["configs"]] == EXAMPLES[example]
