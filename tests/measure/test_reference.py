"""The reference protocol: every return form, a returning reference with kernels that write in place,
and a reference too big for the device. On the CPU."""

import shutil

import pytest
import torch

from kopt.measure.faults import KernelFault
from kopt.measure.reference import outputs_of
from tests.helpers import FIXTURES as FIX
from tests.helpers import ROOT, _copy, run_version


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
