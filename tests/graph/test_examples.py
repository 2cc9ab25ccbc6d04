"""The bundled GEMM and decode-attention examples: every version passes the correctness gate on
its CPU configs through the Triton interpreter, so a broken example kernel shows in CI, not on the
GPU machine (GEMM runs float16 there: the interpreter's bf16 dots are wrong). The GEMM example's
whole CPU graph (v0..v3 with the reports) took 60 s on this 2-core machine."""

import hashlib

import pytest

from kopt.steps.bench import check_then_time
from kopt.workspace.target import load_workspace
from tests.helpers import ROOT, SHARED_TEMPLATE, TEMPLATE_IN_EXAMPLE

pytestmark = pytest.mark.e2e
EXAMPLES = {
    "gemm": ["shape=square", "shape=tall", "shape=small_k"],
    "decode_attention": ["context=short", "context=medium", "context=long"],
    "rmsnorm": ["N=64", "N=200"],
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


# sha256 of the published skill template's files as ../shared/formats/skill-template/ holds them
TEMPLATE_SHA256 = {
    "ref.py": "22f86042dea1aaac8a50ee395b7617dd74b58f2c4400ce4d1c6cdd5508f14cb0",
    "kernel.py": "fb5f2e8995a8de1332733e25acee978838ee1c5b6711af411ca92af347c2bfeb",
    "kernel.cu": "381c3af212e17fd4ee7f3b21036bf36adcccd1487d8696ed7fef5c98e5186a43",
}


@pytest.mark.parametrize("name", sorted(TEMPLATE_SHA256))
def test_the_vector_add_example_is_the_skill_template_verbatim(name):
    """examples/vector_add runs the template as users have it (it needs a GPU: setup() says
    device="cuda"; tests/gpu/test_gpu_template.py runs it there)."""
    ours = ROOT / "examples" / "vector_add" / TEMPLATE_IN_EXAMPLE[name]
    assert hashlib.sha256(ours.read_bytes()).hexdigest() == TEMPLATE_SHA256[name]
    if SHARED_TEMPLATE.is_dir():  # beside the repo in CI
        assert (SHARED_TEMPLATE / name).read_bytes() == ours.read_bytes()
