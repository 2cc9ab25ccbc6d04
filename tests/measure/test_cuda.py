"""A CUDA version's solve() bound to setup()'s values: every mismatch is one line naming the
parameter, caught before solve runs (on the CPU: the library loads, nothing is launched)."""

import pytest
import torch

from kopt.inside.cuda import CudaSolve, load
from kopt.measure.faults import KernelFault
from tests.helpers import ROOT

V7 = ROOT / "examples" / "softmax" / "kernels" / "v7.cu"


@pytest.fixture
def solve(v7_build):
    s = CudaSolve(V7, v7_build["library"])
    s.select({"M": 4, "N": 64, "dtype": "float32"})
    return s


def _xy(dtype=torch.float32):
    return torch.zeros(4, 64, dtype=dtype), torch.zeros(4, 64, dtype=torch.float32)


@pytest.mark.parametrize(
    "given, message",
    [
        (lambda x, y: {"y": y, "x": x}, r"solve parameter 1 'x' receives 'y': setup's order is y, x, M, N"),
        (lambda x, y: {"x": x.double(), "y": y}, r"solve parameter 1 'x' is const float\* x but 'x' holds float64"),
        (lambda x, y: {"x": x, "y": y}, r"solve parameter 1 'x': 'x' is on cpu, not on the GPU"),
        (
            lambda x, y: {"x": x, "y": y, "z": 1},
            r"solve takes 4 parameters \(const float\* x, float\* y, int M, int N\); setup gives 5: x, y, z, M, N",
        ),
        (lambda x, y: {"x": 3, "y": y}, r"solve parameter 1 'x' is a pointer \(const float\* x\) but 'x' is int 3"),
    ],
)
def test_a_mismatch_is_one_line_naming_the_parameter(solve, given, message):
    with pytest.raises(KernelFault, match=message) as e:
        solve(**given(*_xy()))
    assert str(e.value).startswith(f"{V7}: ")


def test_config_scalars_follow_the_tensors_and_a_float_never_becomes_an_int(solve):
    x, y = _xy()
    solve.select({"M": 4.5, "N": 64, "dtype": "float32"})
    with pytest.raises(KernelFault, match=r"solve parameter 3 'M' is int M but 'M' is the float 4.5"):
        solve.arguments({"x": x, "y": y})


def test_config_scalars_follow_the_tensors_in_setups_order(solve):
    x, y = _xy()
    with pytest.raises(KernelFault, match=r"'x' is on cpu"):  # every type matched: only the device is left
        solve.arguments({"x": x, "y": y})
    solve.select({"N": 64, "M": 4, "dtype": "float32"})  # the config names N before M: solve's M gets N
    with pytest.raises(KernelFault, match=r"solve parameter 3 'M' receives 'N': setup's order is x, y, N, M"):
        solve.arguments({"x": x, "y": y})


def test_a_version_without_a_built_library_is_refused():
    with pytest.raises(KernelFault, match=r"has no built library"):
        load(V7, {})
