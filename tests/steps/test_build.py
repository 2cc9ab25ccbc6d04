"""Rule `build`: a CUDA version compiled by nvcc (NVIDIA's wheels in CI, no GPU needed), its ptxas
resources and SASS; a compile error, a bad signature and a missing compiler as one line each; and
what the correctness step makes of a build it cannot run."""

import json

from kopt.steps import build as b
from kopt.steps.common import cannot_run
from kopt.workspace.records import Build
from tests.conftest import BUILD_DEFAULTS

SETTINGS = {"timeout_s": 300, "gpu": "auto", "build": BUILD_DEFAULTS}


def _build(tmp_path, source: str, **opts) -> dict:
    src = tmp_path / "v3.cu"
    src.write_text(source)
    settings = {**SETTINGS, "build": {**BUILD_DEFAULTS, **opts}}
    out = tmp_path / "build"
    return b.build(version="v3", kernel=str(src), out_dir=str(out), settings=settings)


def test_the_example_compiles_with_its_resources_and_sass(v7_build):
    doc = v7_build
    assert doc["status"] == "ok", doc["error"]
    Build.model_validate(json.loads((doc["dir"] / "build.json").read_text()))
    assert doc["solve"] == ["const float* x", "float* y", "int M", "int N"]
    assert doc["arch"].startswith("sm_") and "-O3" in doc["command"] and "--ptxas-options=-v" in doc["command"]
    assert (doc["dir"] / "v7.so").stat().st_size > 0 and (doc["dir"] / "compile.log").is_file()
    names = {k["name"]: k for k in doc["kernels"]}
    assert set(names) >= {
        "softmax_any(float const*, float*, int)",
        "void softmax_warp_rows<2>(float4 const*, float4*, int)",
    }
    assert all(k["n_regs"] > 0 and k["n_spills"] == 0 for k in doc["kernels"])
    assert names["softmax_any(float const*, float*, int)"]["shared_bytes"] > 0  # its reductions' shared arrays
    sass = (doc["dir"] / doc["sass"]).read_text()
    assert "softmax_warp_rows" in sass and doc["arch"].rstrip("a") in sass


def test_a_compile_error_fails_the_build_with_the_compilers_first_error(tmp_path):
    doc = _build(tmp_path, 'extern "C" void solve(float* x, int n) { undefined_helper(x, n); }\n')
    assert doc["status"] == "failed" and doc["library"] is None
    assert doc["error"].startswith(f"{tmp_path / 'v3.cu'}: does not compile: ")
    assert 'identifier "undefined_helper" is undefined' in doc["error"] and "\n" not in doc["error"]


def test_a_source_compiles_with_its_local_headers(tmp_path):
    """nvcc compiles the kernel where it lies, so a quoted include next to it is found."""
    (tmp_path / "helper.cuh").write_text("__device__ inline float twice(float v) { return 2 * v; }\n")
    source = '#include "helper.cuh"\n__global__ void k(float* x) { x[0] = twice(x[0]); }\n'
    doc = _build(tmp_path, source + 'extern "C" void solve(float* x) { k<<<1, 1>>>(x); }\n')
    assert doc["status"] == "ok", doc["error"]


def test_a_bad_signature_fails_before_anything_compiles(tmp_path):
    doc = _build(tmp_path, 'extern "C" void solve(float** x) { }\n')
    assert doc["status"] == "failed" and doc["command"] is None
    assert "parameter 'x' is a pointer to a pointer" in doc["error"]


def test_no_compiler_is_said_not_failed(tmp_path):
    doc = _build(tmp_path, 'extern "C" void solve(float* x) { }\n', nvcc="no-such-nvcc")
    assert doc["status"] == "no-compiler" and "nvcc not found" in doc["error"]


def test_nvcc_is_found_in_nvidias_wheels_without_a_toolkit(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("CUDA_HOME", str(tmp_path / "none"))
    nvcc = b.find_nvcc()
    assert nvcc is not None and nvcc.endswith("/bin/nvcc") and "site-packages/nvidia/cu" in nvcc


def test_what_the_correctness_step_makes_of_a_build(v7_build, tmp_path):
    failed = _build(tmp_path, 'extern "C" void solve(float* x) { nope(); }\n')
    assert cannot_run([str(tmp_path / "build")], {"device": "auto"}) == ("failed", failed["error"])
    status, why = cannot_run([str(v7_build["dir"])], {"device": "cpu"})
    assert status == "unsupported" and why.startswith("needs a CUDA GPU: ") and "v7.cu" in why
