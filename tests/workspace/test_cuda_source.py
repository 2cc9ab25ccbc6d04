"""The solve() signature of a CUDA version, read from its source."""

import pytest

from kopt.workspace.cuda_source import SignatureError, solve_params
from tests.helpers import ROOT

EXAMPLE = ROOT / "examples" / "softmax" / "kernels" / "v7.cu"


def test_the_example_solve_takes_x_y_m_n():
    params = solve_params(EXAMPLE)
    assert [p.describe() for p in params] == ["const float* x", "float* y", "int M", "int N"]
    assert [(p.pointer, p.const, p.dtype) for p in params] == [
        (True, True, "float32"),
        (True, False, "float32"),
        (False, False, "int32"),
        (False, False, "int32"),
    ]


def test_qualifiers_comments_and_scalar_types(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(
        '// extern "C" void solve(int nope) {}\n'
        'extern "C" __host__ void solve(const __nv_bfloat16* __restrict__ a, /* the output */ double *out,\n'
        "    int64_t n, float alpha, void* scratch) { }\n"
    )
    params = solve_params(src)
    assert [(p.name, p.ctype, p.pointer, p.dtype) for p in params] == [
        ("a", "__nv_bfloat16", True, "bfloat16"),
        ("out", "double", True, "float64"),
        ("n", "int64_t", False, "int64"),
        ("alpha", "float", False, "float32"),
        ("scratch", "void", True, None),
    ]


@pytest.mark.parametrize(
    "source, message",
    [
        ("__global__ void k() {}", r'defines no extern "C" void solve'),
        ('extern "C" void solve(float** x) {}', r"parameter 'x' is a pointer to a pointer"),
        ('extern "C" void solve(float4* x) {}', r"parameter 'x': unsupported element type 'float4'"),
        ('extern "C" void solve(float* x, short n) {}', r"parameter 'n': unsupported scalar type 'short'"),
        ('extern "C" void solve(float* x, int x) {}', r"parameter 'x' appears twice"),
        ('extern "C" void solve(float*) {}', r"parameter 1 'float\*' has no type and name"),
        ('extern "C" void solve(int n) {}\nextern "C" void solve(int m) {}', r"defines solve\(\) 2 times"),
    ],
)
def test_a_bad_signature_is_one_line_naming_the_parameter(tmp_path, source, message):
    src = tmp_path / "bad.cu"
    src.write_text(source)
    with pytest.raises(SignatureError, match=message) as e:
        solve_params(src)
    assert str(e.value).startswith(f"{src}: ") and "\n" not in str(e.value)
