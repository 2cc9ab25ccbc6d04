"""The reference protocol and the comparison: returning references, every dtype, a reference too
big for the device, and what the CPU interpreter cannot run. On the CPU."""

import shutil
from pathlib import Path

import pytest
import torch
import yaml

from kopt.measure.faults import KernelFault
from kopt.measure.reference import outputs_of
from tests.test_bad_kernels import run_version

ROOT = Path(__file__).resolve().parents[1]
FIX = Path(__file__).parent / "fixtures"
DTYPES = FIX / "dtypes"


def _copy(src: Path, dst: Path, **target) -> Path:
    shutil.copytree(src, dst)
    doc = yaml.safe_load((dst / "target.yaml").read_text())
    doc.update(target)
    (dst / "target.yaml").write_text(yaml.safe_dump(doc))
    return dst


@pytest.mark.parametrize(
    "kernel, status, says",
    [
        (DTYPES / "kernels" / "v0.py", "pass", None),
        (FIX / "dtype_kernels" / "returns_outputs.py", "pass", None),
        (FIX / "dtype_kernels" / "wrong_idx.py", "incorrect", "output 'idx': "),
        (FIX / "dtype_kernels" / "off_by_one.py", "incorrect", "differ from the reference (exact dtype)"),
        (FIX / "dtype_kernels" / "wrong_bool.py", "incorrect", "output 'pos': "),
        (FIX / "dtype_kernels" / "returns_int32.py", "incorrect", "output 'idx': dtype int32 differs from the reference's int64"),
    ],
)
def test_integer_and_bool_outputs_are_compared_exactly(tmp_path, run_params, kernel, status, says):
    corr, _, _ = run_version(DTYPES, kernel, run_params, tmp_path)
    assert corr["status"] == status, corr["error"]
    if says:
        assert says in corr["error"]
    outs = {o["name"]: o for o in corr["configs"][0]["outputs"]}
    assert outs["idx"]["dtype"] == "int64" and outs["pos"]["dtype"] == "bool"
    assert outs["idx"]["tolerance"] == {"atol": 0.0, "rtol": 0.0}


def test_a_tolerance_given_for_an_integer_dtype_applies(tmp_path, run_params):
    ws = _copy(DTYPES, tmp_path / "ws", tolerances={"float32": {"atol": 1e-6, "rtol": 1e-5}, "int64": {"atol": 1, "rtol": 0}})
    corr, _, _ = run_version(ws, FIX / "dtype_kernels" / "off_by_one.py", run_params, tmp_path)
    assert corr["status"] == "pass", corr["error"]


def test_outputs_of_maps_every_return_form():
    a, b = torch.zeros(2), torch.ones(3)
    assert outputs_of(a, ["y"], {}, "r")["y"] is a
    assert outputs_of(a, [], {}, "r")["out"] is a
    assert list(outputs_of((a, b), ["p", "q"], {}, "r")) == ["p", "q"]
    assert outputs_of({"q": b, "p": a}, ["p", "q"], {}, "r")["p"] is a
    assert outputs_of(None, ["y"], {"y": a}, "r")["y"] is a
    with pytest.raises(KernelFault, match="returned 2 tensors, but setup\\(\\) lists 1"):
        outputs_of((a, b), ["y"], {}, "r")
    with pytest.raises(KernelFault, match="returned no tensors"):
        outputs_of(None, ["y"], {}, "r")


def test_the_example_reference_returns_and_kernels_write_in_place(tiny, tmp_path, run_params):
    corr, df, _ = run_version(tiny, tiny / "kernels" / "v0.py", run_params, tmp_path)
    assert corr["status"] == "pass" and (df["status"] == "ok").all()
    rec = corr["configs"][0]
    assert rec["reference_returns"] is True and rec["outputs"][0]["name"] == "y"


def test_a_reference_too_big_for_the_device_is_still_checked(tmp_path, run_params):
    """Under a memory limit the float64 reference does not fit: it runs in float32, with the
    widened tolerance recorded, and still tells right from wrong."""
    ws = _copy(FIX / "tiny", tmp_path / "ws", cpu_configs=[{"M": 4, "N": 64, "dtype": "float32"}])
    shutil.copy(ROOT / "examples" / "softmax" / "ref.py", ws / "ref.py")
    shutil.copy(ROOT / "examples" / "softmax" / "kernels" / "v1.py", ws / "kernels" / "v0.py")
    # 8 KiB: x and y (4x64) fit in float32 only (the host plan counts 3x, it cannot catch an OOM)
    params = {**run_params, "device": "cpu", "inputs": {"reference_memory_limit_mb": 8e-3}}
    corr, df, _ = run_version(ws, ws / "kernels" / "v0.py", params, tmp_path / "honest")
    ref = corr["configs"][0]["reference"]
    assert corr["status"] == "pass", corr["error"]
    assert ref["precision"] == "float32" and ref["widened_rtol_by"] > 0 and "float64 on cpu needs" in ref["why"]
    assert (df["status"] == "ok").all()
    wrong, _, _ = run_version(ws, FIX / "bad_kernels" / "wrong.py", params, tmp_path / "wrong")
    assert wrong["status"] == "incorrect" and "outside atol" in wrong["error"]
    tiny_limit = {**params, "inputs": {"reference_memory_limit_mb": 1e-4}}
    nowhere, _, _ = run_version(ws, ws / "kernels" / "v0.py", tiny_limit, tmp_path / "nowhere")
    assert nowhere["status"] == "failed" and "ref.py: reference() does not fit anywhere" in nowhere["error"]


# The interpreter tests force device=cpu; they need numpy < 2.4 (the install pins it), which the
# GPU machine's own image does not have, so its runs leave them out (-k "not interpreter").


def test_the_interpreter_runs_a_runtime_bound_loop_with_dot(tmp_path, run_params):
    gemm = ROOT / "examples" / "kernelbench" / "gemm_add_relu"
    corr, df, _ = run_version(gemm, gemm / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path)
    assert corr["status"] == "pass", corr["error"]
    assert (df["status"] == "ok").all()


def test_autotune_on_the_interpreter_is_one_clear_line(tiny, tmp_path, run_params):
    kernel = FIX / "interp_kernels" / "autotuned.py"
    corr, _, _ = run_version(tiny, kernel, {**run_params, "device": "cpu"}, tmp_path)
    assert corr["status"] == "failed"
    assert "autotuned.py: @triton.autotune cannot run on the Triton CPU interpreter" in corr["error"]


def test_bf16_dot_on_the_interpreter_is_one_clear_line(tmp_path, run_params):
    gemm = ROOT / "examples" / "kernelbench" / "gemm_add_relu"
    ws = _copy(gemm, tmp_path / "ws", cpu_configs=[{"M": 16, "N": 16, "K": 32, "dtype": "bfloat16"}],
               tolerances={"float32": {"atol": 1e-2, "rtol": 1e-2}, "bfloat16": {"atol": 2e-2, "rtol": 2e-2}})
    corr, _, _ = run_version(ws, ws / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path)
    assert corr["status"] == "failed"
    assert "v0.py: tl.dot on bfloat16 cannot run on the Triton CPU interpreter" in corr["error"]
    assert "float32" in corr["error"]
