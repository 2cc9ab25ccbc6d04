"""The comparison per output and dtype: integer and bool outputs exactly, unless target.yaml gives a
tolerance for their dtype. On the CPU."""

import pytest

from tests.helpers import FIXTURES as FIX
from tests.helpers import _copy, run_version

DTYPES = FIX / "dtypes"


@pytest.mark.parametrize(
    "kernel, status, says",
    [
        (DTYPES / "kernels" / "v0.py", "pass", None),
        (FIX / "dtype_kernels" / "returns_outputs.py", "pass", None),
        (FIX / "dtype_kernels" / "wrong_idx.py", "incorrect", "output 'idx': "),
        (FIX / "dtype_kernels" / "off_by_one.py", "incorrect", "differ from the reference (exact dtype)"),
        (FIX / "dtype_kernels" / "wrong_bool.py", "incorrect", "output 'pos': "),
        (
            FIX / "dtype_kernels" / "returns_int32.py",
            "incorrect",
            "output 'idx': dtype int32 differs from the reference's int64",
        ),
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
    ws = _copy(
        DTYPES, tmp_path / "ws", tolerances={"float32": {"atol": 1e-6, "rtol": 1e-5}, "int64": {"atol": 1, "rtol": 0}}
    )
    corr, _, _ = run_version(ws, FIX / "dtype_kernels" / "off_by_one.py", run_params, tmp_path)
    assert corr["status"] == "pass", corr["error"]


def test_a_complex_output_is_compared_in_both_parts():
    """Issue 42's second review: float64 of a complex tensor is its real part alone, so garbage in
    the imaginary parts passed. Both parts are compared now, and the line names the complex value."""
    import torch

    from kopt.measure.reference import OutputSpec
    from kopt.measure.verify import compare

    exp = torch.complex(torch.randn(64), torch.randn(64))
    spec = OutputSpec("y", (64,), "complex64", False)
    tol = {"atol": 1e-5, "rtol": 1e-5}
    assert compare(exp.clone(), exp, spec, tol)["ok"]
    bad = torch.complex(exp.real, torch.zeros(64))
    got = compare(bad, exp, spec, tol)
    assert not got["ok"] and "elements outside" in got["reason"] and "j" in got["reason"], got
