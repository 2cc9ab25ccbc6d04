"""GPU-only (issue 32): the formats users bring, run as they are on the GPU. gpu-mode's pmpp
problems (vectoradd, grayscale) with their own submission.py, whose generate_input makes its
tensors on "cuda"; vectoradd's Triton custom_kernel; KernelBench's example with its Triton
ModelNew and with its load_inline CUDA ModelNew (compiled once, at import, outside every timing).
Output committed from the H100 (docs/runs/)."""

import json
import shutil

import pytest
import torch

from kopt.cli import main
from kopt.formats.kernelbench_workspace import CHECK_DRAWS, MORE_DRAWS
from tests.helpers import FIXTURES, run_version

GM = FIXTURES / "gpumode" / "pmpp_v2"
KB = FIXTURES / "kernelbench"
SOLUTIONS = FIXTURES / "kernelbench_solutions"


def _passes(ws, kernel, run_params, out, timeout_s=60):
    params = {**run_params, "device": "auto", "timeout_s": timeout_s}
    corr, df, out_dir = run_version(ws, kernel, params, out)
    cols = [c for c in ("config_key", "status", "clock", "gpu_us", "median_us", "error") if c in df]
    print(df[cols].to_string())
    assert corr["device"] == "cuda" and corr["status"] == "pass", corr.get("error")
    assert (df["status"] == "ok").all(), df["error"].tolist()
    return corr, df, out_dir


@pytest.mark.parametrize(
    "problem, solution",
    [("vectoradd_py", None), ("grayscale_py", None), ("vectoradd_py", "solutions/submission_triton.py")],
)
def test_gpu_mode_problems_run_their_own_submissions_on_the_gpu(tmp_path, run_params, problem, solution):
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--gpumode", str(GM / problem)]) == 0
    kernel = ws / "kernels" / "v0.py"
    if solution:
        kernel = ws / "kernels" / "v1.py"
        shutil.copyfile(GM / problem / solution, kernel)
    _, df, _ = _passes(ws, kernel, run_params, tmp_path / "out")
    if shutil.which("ncu"):
        assert set(df["clock"]) == {"ncu"} and (df["gpu_us"] > 0).all()


@pytest.mark.parametrize("solution", ["model_new_ex_add_triton.py", "model_new_ex_add.py"])
def test_kernelbenchs_example_solutions_run_on_the_gpu(tmp_path, run_params, solution):
    """model_new_ex_add.py builds its CUDA add with torch's load_inline at import: once per
    version (its build cached in the version's own cache, kopt.measure.boundary.kernel_cache), in
    the gate's process; the clock's processes load it from there. No timed call holds the build."""
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--kernelbench", str(KB / "model_ex_add.py")]) == 0
    kernel = ws / "kernels" / "v1.py"
    shutil.copyfile(SOLUTIONS / solution, kernel)
    _, df, out = _passes(ws, kernel, run_params, tmp_path / "out", timeout_s=600)
    # a build (tens of seconds) inside a timed call would show in the judge's wall time per call
    assert (df["wall_us"] < 1e6).all(), df["wall_us"].tolist()
    if shutil.which("ncu"):
        per_config = json.loads((out / "bench.json").read_text())["inputs"]["per_config"]
        assert all(max(c["wall_us"] for c in rec["clock_calls"]) < 1e6 for rec in per_config.values())


CONV = """import torch
import torch.nn as nn

batch_size, in_channels, out_channels, kernel_size, height, width = 16, 64, 128, 3, 128, 128


class Model(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int):
        super().__init__()
        self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2d(x)


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
"""

TF32_ON = "import torch\n\ntorch.backends.cudnn.allow_tf32 = True\n\n"


@pytest.mark.parametrize("tf32_version, status", [(False, "pass"), (True, "incorrect")])
def test_a_convolutions_own_torch_eager_passes_and_one_that_drops_to_tf32_is_caught(
    tmp_path, run_params, tf32_version, status
):
    """Issue 43, point 2: torch's convolutions use TF32 by default, and KernelBench's
    50_conv_standard_2D's own torch eager failed its float64 gate at 1e-4 on an H200 (13.5M of 74M
    elements). The kernel's process switches TF32 off: v0 passes; a version that turns it back on
    is caught by the gate, and the record says so."""
    (tmp_path / "conv.py").write_text(CONV)
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--kernelbench", str(tmp_path / "conv.py")]) == 0
    kernel = ws / "kernels" / "v0.py"
    if tf32_version:
        kernel = ws / "kernels" / "v1.py"
        kernel.write_text(TF32_ON + (ws / "kernels" / "v0.py").read_text())
    corr, _, _ = run_version(ws, kernel, {**run_params, "device": "auto", "timeout_s": 120}, tmp_path / "out")
    print(corr["status"], corr.get("error"), corr["provenance"]["precision"])
    assert corr["status"] == status, corr.get("error")
    assert corr["provenance"]["precision"]["reported"]["cudnn"] is tf32_version


GRU = """import torch
import torch.nn as nn

batch_size, seq_len, input_size, hidden_size, num_layers = 10, 64, 32, 64, 3


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, num_layers):
        super().__init__()
        self.gru = nn.GRU(input_size, hidden_size, num_layers)

    def forward(self, x, h0):
        output, h_n = self.gru(x, h0)
        return output


def get_inputs():
    return [torch.rand(seq_len, batch_size, input_size), torch.rand(num_layers, batch_size, hidden_size)]


def get_init_inputs():
    return [input_size, hidden_size, num_layers]
"""


def test_an_rnns_own_torch_eager_reads_every_draws_weights(tmp_path, run_params):
    """KernelBench level 3's 39_GRU (its sizes cut): on the H200 its own v0 failed the gate on
    1308926 of 1310720 elements, as did GRUHidden and three LSTMs: cuDNN flattens an RNN's weights
    by pointing them at a buffer of its own, and under functional_call they were the arena's
    tensors, so later draws were never read (kopt.formats.kernelbench.Problem.forward;
    tests/formats/test_kernelbench.py emulates it on the CPU)."""
    (tmp_path / "gru.py").write_text(GRU)
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--kernelbench", str(tmp_path / "gru.py")]) == 0
    corr, df, _ = run_version(ws, ws / "kernels" / "v0.py", {**run_params, "device": "auto"}, tmp_path / "out")
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), corr.get("error")


def test_a_model_within_kernelbenchs_tolerance_only_on_its_cpu_sizes_passes_its_own_v0(tmp_path, run_params, capsys):
    """KernelBench level 2's 14_Gemm_Divide_Sum_Scaling (a 1024x8192x8192 GEMM summed over 8192):
    its float32 met 1e-4 on its CPU sizes, and on an H200 at its own its v0 missed it on 21 of 1024
    elements. init runs as many draws as the gate at the file's own sizes on the GPU (TF32 off, as
    v0's gate; one draw met 1e-4 there) and takes the tolerance they meet twice over: v0 passes
    (tests/formats emulates it on the CPU)."""
    ws, before = tmp_path / "ws", torch.cuda.is_initialized()
    assert main(["init", str(ws), "--kernelbench", str(KB / "14_Gemm_Divide_Sum_Scaling.py")]) == 0
    said = capsys.readouterr().out
    # three draws, as the gate's; sixteen where those three miss the tolerance chosen so far (3828a7c)
    assert any(f"at the file's own sizes ({n} draws, on the GPU)" in said for n in (CHECK_DRAWS, MORE_DRAWS)), said
    assert torch.cuda.is_initialized() is before  # the draws ran in a child: no CUDA context here
    _passes(ws, ws / "kernels" / "v0.py", run_params, tmp_path / "out", timeout_s=120)
