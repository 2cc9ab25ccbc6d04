"""What the Triton CPU interpreter runs (a runtime-bound loop with tl.dot) and what it cannot, said in
one clear line (@triton.autotune, tl.dot on bfloat16)."""

import os

import pytest

from kopt.measure.faults import KernelFault
from tests.helpers import FIXTURES as FIX
from tests.helpers import ROOT, _copy, kernel_process, run_version

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


def test_a_bf16_gemm_is_checked_on_the_interpreter(tmp_path, run_params):
    """Issue 43: numpy has no bfloat16 and the interpreter multiplied its raw bits; tl.dot on
    bfloat16 now computes as the tensor cores do, so a bf16 GEMM passes its gate on a laptop."""
    gemm = ROOT / "examples" / "kernelbench" / "gemm_add_relu"
    ws = _copy(
        gemm,
        tmp_path / "ws",
        cpu_configs=[{"M": 16, "N": 16, "K": 32, "dtype": "bfloat16"}],
        tolerances={"float32": {"atol": 1e-2, "rtol": 1e-2}, "bfloat16": {"atol": 2e-2, "rtol": 2e-2}},
    )
    corr, df, _ = run_version(ws, ws / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path)
    assert corr["status"] == "pass", corr["error"]
    assert (df["status"] == "ok").all()


def test_the_interpreters_bf16_dot_is_float32_math_on_the_widened_inputs():
    """The emulated dot against torch on the same bfloat16 values (products exact in float32, sums
    in float32), with an accumulator in float32 and in bfloat16 (rounded back to nearest even)."""
    import numpy as np
    import torch
    import triton.language as tl
    from triton.runtime.interpreter import InterpreterBuilder, TensorHandle

    from kopt.inside import interpreter

    interpreter.install("kernel.py")
    a, b = torch.randn(16, 32).bfloat16(), torch.randn(32, 8).bfloat16()
    bits = [TensorHandle(t.view(torch.uint16).numpy(), tl.bfloat16) for t in (a, b)]
    acc = TensorHandle(np.ones((16, 8), dtype=np.float32), tl.float32)
    got = InterpreterBuilder.create_dot(None, *bits, acc, None, None)
    want = a.float() @ b.float() + 1
    assert got.dtype == tl.float32 and np.allclose(got.data, want.numpy(), rtol=1e-6, atol=1e-5)
    acc16 = TensorHandle(torch.ones(16, 8).bfloat16().view(torch.uint16).numpy(), tl.bfloat16)
    got16 = InterpreterBuilder.create_dot(None, *bits, acc16, None, None)
    as_bf16 = torch.from_numpy(got16.data.astype(np.int16)).view(torch.bfloat16)
    assert got16.dtype == tl.bfloat16 and torch.equal(as_bf16, want.bfloat16())
    cast = InterpreterBuilder.cast_impl(None, got, tl.bfloat16)  # a kernel's acc.to(tl.bfloat16)
    assert torch.equal(torch.from_numpy(cast.data.astype(np.int16)).view(torch.bfloat16), want.bfloat16())


@pytest.mark.parametrize(
    "device, said",
    [
        ("auto", "run it with device=cpu"),
        ("cpu", "device=cpu, but this process was started without TRITON_INTERPRET=1"),
    ],
)
def test_a_process_that_imported_triton_compiled_is_told_to_ask_for_the_cpu(tmp_path, device, said):
    """On a GPU machine where torch sees no GPU (CUDA_VISIBLE_DEVICES="", a CPU job's cgroup), device
    auto chooses the CPU after the kernel's process imported Triton compiled (with a GPU build of
    torch it does so while the judge waits): one line naming the fix, not Triton's "Cannot call
    @triton.jit'd outside of the scope of a kernel" at the first call. Emulated: Triton imported at
    the process's start (a sitecustomize), TRITON_INTERPRET 0. Where device=cpu was asked, whoever
    started the process without the interpreter is named instead (the judge sets it)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text("import triton\n")
    env = {"TRITON_INTERPRET": "0", "PYTHONPATH": os.pathsep.join([str(site), str(ROOT)])}
    kernel = ROOT / "examples" / "softmax" / "kernels" / "v1.py"
    with pytest.raises(KernelFault, match=said), kernel_process(kernel, device=device, env=env):
        pass
