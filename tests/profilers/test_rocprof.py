"""rocprofv3's kernel trace, on a fixture written from the documented columns."""

import pytest

from kopt.profilers import rocprof
from tests.helpers import FIXTURES

FIX = FIXTURES / "profiles"


def test_rocprof_kernel_trace():
    ks = rocprof.parse_kernel_trace((FIX / "rocprofv3_kernel_trace.csv").read_text())
    assert ks[0]["name"] == "softmax_one_pass" and ks[0]["launches"] == 2
    assert ks[0]["mean_us"] == pytest.approx(250.0) and ks[0]["vgpr"] == 32 and ks[0]["sgpr"] == 16
    assert ks[0]["workgroup"] == [64, 1, 1] and ks[0]["share"] == pytest.approx(500 / 510)
    with pytest.raises(ValueError):
        rocprof.parse_kernel_trace('"a","b"\n1,2\n')
