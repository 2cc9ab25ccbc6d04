"""What the Triton CPU interpreter runs (a runtime-bound loop with tl.dot) and what it cannot, said in
one clear line (@triton.autotune, tl.dot on bfloat16)."""

from tests.helpers import FIXTURES as FIX
from tests.helpers import ROOT, _copy, run_version

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
    ws = _copy(
        gemm,
        tmp_path / "ws",
        cpu_configs=[{"M": 16, "N": 16, "K": 32, "dtype": "bfloat16"}],
        tolerances={"float32": {"atol": 1e-2, "rtol": 1e-2}, "bfloat16": {"atol": 2e-2, "rtol": 2e-2}},
    )
    corr, _, _ = run_version(ws, ws / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path)
    assert corr["status"] == "failed"
    assert "v0.py: tl.dot on bfloat16 cannot run on the Triton CPU interpreter" in corr["error"]
    assert "float32" in corr["error"]
