"""`kopt init --kernelbench`: KernelBench's own problem files (tests/fixtures/kernelbench/, verbatim)
made into workspaces whose torch-eager v0 passes the gate on the CPU, with the Model's weights
made from the seed and handed to kernels; what cannot be mapped is one line and leaves nothing."""

from __future__ import annotations

import shutil

import pytest
import torch
import yaml

from kopt.cli import main
from kopt.formats import kernelbench_workspace as kw
from kopt.formats.kernelbench import Problem, ProblemError
from tests.helpers import FIXTURES, run_version

KB = FIXTURES / "kernelbench"


def test_a_level_1_problem_becomes_a_workspace_with_its_own_sizes(tmp_path, capsys):
    assert main(["init", str(tmp_path / "ws"), "--kernelbench", str(KB / "23_Softmax.py")]) == 0
    said = capsys.readouterr().out
    ws = tmp_path / "ws"
    assert (ws / "problem.py").read_text() == (KB / "23_Softmax.py").read_text()
    target = yaml.safe_load((ws / "target.yaml").read_text())
    assert target["configs"] == [{"batch_size": 4096, "dim": 393216}]  # the file's own sizes
    small = target["cpu_configs"][0]
    assert small["batch_size"] * small["dim"] <= kw.CPU_BUDGET and small != target["configs"][0]
    assert target["tolerances"]["float32"] == {"atol": 1e-4, "rtol": 1e-4}
    assert "inputs ['x']" in said and "outputs ['out']" in said and "CPU config" in said


@pytest.mark.parametrize(
    "name", ["23_Softmax", "9_Tall_skinny_matrix_multiplication_", "12_Gemm_Multiply_LeakyReLU", "33_BatchNorm"]
)
def test_its_torch_eager_v0_passes_the_gate_on_the_cpu(tmp_path, run_params, name):
    ws = tmp_path / name
    kw.init(ws, KB / f"{name}.py")
    corr, df, _ = run_version(ws, ws / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path / "out")
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), (corr.get("error"), df.get("error"))


def test_the_models_weights_come_from_the_seed_and_reach_the_kernel_by_name(tmp_path):
    """A level-2 problem with an nn.Linear: its weight and bias are inputs (w_gemm__weight,
    w_gemm__bias), the same for the same seed and others for another; the reference uses them."""
    shutil.copy(KB / "12_Gemm_Multiply_LeakyReLU.py", tmp_path / "problem.py")
    p = Problem(tmp_path / "problem.py")
    sizes = {"batch_size": 4, "in_features": 8, "out_features": 6, "multiplier": 2.0, "negative_slope": 0.1}
    a, b, c = (p.setup(s, **sizes)["inputs"] for s in (1, 1, 2))
    assert {"x", "w_gemm__weight", "w_gemm__bias", "cfg_batch_size"} <= set(a)
    assert torch.equal(a["w_gemm__weight"], b["w_gemm__weight"]) and not torch.equal(
        a["w_gemm__weight"], c["w_gemm__weight"]
    )
    x, w, bias = a["x"], a["w_gemm__weight"], a["w_gemm__bias"]
    expected = torch.nn.functional.leaky_relu((x @ w.T + bias) * 2.0, 0.1)
    assert torch.allclose(p.reference(**a), expected)
    zeroed = {**a, "w_gemm__weight": torch.zeros_like(w)}  # the weights given, not the Model's own
    assert torch.allclose(p.reference(**zeroed), torch.nn.functional.leaky_relu(bias.expand(4, 6) * 2.0, 0.1))


@pytest.mark.parametrize(
    "body, words",
    [
        ("import torch\nx = 3\ndef get_inputs():\n    return []\n", "no Model"),
        ("raise RuntimeError('broken')\n", "does not run (RuntimeError: broken)"),
        (
            "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
            "def get_inputs():\n    return [torch.rand(4096, 4096)]\ndef get_init_inputs():\n    return []\n",
            "get_inputs fixes its shapes (no module-level sizes), and its inputs and weights hold 16777216",
        ),
    ],
)
def test_what_cannot_be_mapped_is_one_line_and_leaves_nothing(tmp_path, capsys, body, words):
    src = tmp_path / "bad.py"
    src.write_text(body)
    assert main(["init", str(tmp_path / "ws"), "--kernelbench", str(src)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(src) in err and words in err
    assert not (tmp_path / "ws").exists() and not list(tmp_path.glob(".ws*"))


def test_a_workspace_is_not_written_over(tmp_path):
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "mine.txt").write_text("keep")
    with pytest.raises(ProblemError, match="exists and is not empty"):
        kw.init(tmp_path / "ws", KB / "23_Softmax.py")
    assert [p.name for p in (tmp_path / "ws").iterdir()] == ["mine.txt"]


def test_what_the_file_derives_from_its_sizes_follows_a_smaller_config(tmp_path):
    """76_Gemm_Add_ReLU: ``bias_shape = (out_features,)``. Each size is set where the file assigns
    it, before the rest runs, so the CPU config halves out_features too (it kept 8192 when the
    sizes were only set after the file had run: a helper found it on KernelBench's level 2)."""
    p = Problem(KB / "76_Gemm_Add_ReLU.py")
    assert p.namespace({"batch_size": 4, "in_features": 16, "out_features": 8})["bias_shape"] == (8,)
    assert main(["init", str(tmp_path / "ws"), "--kernelbench", str(KB / "76_Gemm_Add_ReLU.py")]) == 0
    small = yaml.safe_load((tmp_path / "ws" / "target.yaml").read_text())["cpu_configs"][0]
    assert small["out_features"] < 8192 and small["in_features"] < 8192, small


def test_the_fixtures_are_kernelbench_s_files_as_they_are():
    assert "ScalingIntelligence/KernelBench" in (KB / "SOURCE.md").read_text()
    assert all("def get_init_inputs" in p.read_text() for p in KB.glob("*.py"))


def test_a_training_mode_batchnorm_leaves_its_running_statistics_as_given(tmp_path):
    """KernelBench runs the Model as built (training mode): a BatchNorm updates its running
    statistics. They are inputs here, so the reference works on copies: setup stays deterministic
    and no input changes under the reference."""
    shutil.copy(KB / "33_BatchNorm.py", tmp_path / "problem.py")
    p = Problem(tmp_path / "problem.py")
    sizes = {"batch_size": 4, "features": 3, "dim1": 5, "dim2": 6}
    a = p.setup(7, **sizes)["inputs"]
    before = a["w_bn__running_mean"].clone()
    p.reference(**a)
    assert torch.equal(a["w_bn__running_mean"], before)
    assert torch.equal(p.setup(7, **sizes)["inputs"]["w_bn__running_mean"], before)


SOLUTIONS = FIXTURES / "kernelbench_solutions"


def test_a_modelnew_version_runs_as_kernelbench_runs_it_with_the_models_weights(tmp_path, run_params):
    """A version that defines ModelNew (no run_kernel): built with the problem's init inputs, given
    the reference Model's weights of each draw, its Triton epilogue through the interpreter."""
    ws = tmp_path / "ws"
    kw.init(ws, KB / "12_Gemm_Multiply_LeakyReLU.py")
    shutil.copy(SOLUTIONS / "gemm_triton_epilogue.py", ws / "kernels" / "v1.py")
    corr, df, _ = run_version(ws, ws / "kernels" / "v1.py", {**run_params, "device": "cpu"}, tmp_path / "out")
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), (corr.get("error"), df.get("error"))


def test_a_modelnew_whose_parameters_are_not_the_models_is_one_line(tmp_path, run_params):
    ws = tmp_path / "ws"
    kw.init(ws, KB / "12_Gemm_Multiply_LeakyReLU.py")
    shutil.copy(SOLUTIONS / "gemm_renamed.py", ws / "kernels" / "v1.py")
    corr, _, _ = run_version(ws, ws / "kernels" / "v1.py", {**run_params, "device": "cpu"}, tmp_path / "out")
    assert corr["status"] != "pass"
    assert "ModelNew's parameters ['linear.bias', 'linear.weight'] are not the Model's" in corr["error"], corr["error"]


@pytest.mark.e2e
def test_kernelbenchs_own_example_and_its_triton_solution_run_through_the_graph_on_the_cpu(tmp_path):
    """KernelBench's example (model_ex_add.py: no sizes, get_inputs calls .cuda()) and its Triton
    ModelNew (model_new_ex_add_triton.py: asserts is_cuda), as they are, v0 and v1 of a workspace
    made by kopt init, end to end through the graph in the interpreter."""
    import json

    from tests.helpers import copy_project, snakemake

    dst = copy_project(tmp_path)
    ws = dst / "add"
    assert main(["init", str(ws), "--kernelbench", str(KB / "model_ex_add.py")]) == 0
    target = yaml.safe_load((ws / "target.yaml").read_text())
    assert target["configs"] == [{"inputs": "1x128,1x128"}] == target["cpu_configs"] and target["class_by"] == [
        "inputs"
    ]
    shutil.copyfile(SOLUTIONS / "model_new_ex_add_triton.py", ws / "kernels" / "v1.py")
    (ws / "kernels" / "v1.yaml").write_text("parent: v0\nhypothesis: h\nrationale: r\nexpected: e\n")
    p = snakemake(dst, "results/v1/compare.json", config=[f"workspace={ws}"])
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    res = dst / "results"
    corr = [json.loads((res / v / "correctness.json").read_text()) for v in ("v0", "v1")]
    assert [c["status"] for c in corr] == ["pass", "pass"], [c.get("error") for c in corr]
    # the interpreter runs the Triton add far slower than torch's: a discard (labelled, not evidence)
    assert json.loads((res / "v1" / "compare.json").read_text())["decision"] == "discard"


@pytest.mark.parametrize("name", ["66_Matmul_Dropout_Softmax.py", "35_LSTM.py"])
def test_a_model_random_in_forward_is_one_line_at_init(tmp_path, capsys, name):
    """Issue 43: a Dropout in training mode (level 2, 66) and a torch.randn in forward (level 3's
    LSTM) made v0 "incorrect" or the float64 reference crash; init now says why, and the fix."""
    assert main(["init", str(tmp_path / "ws"), "--kernelbench", str(KB / name)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and name in err and "other outputs for the same inputs" in err, err
    assert "make forward deterministic" in err and not (tmp_path / "ws").exists()


SYNTHETIC = """import torch

n = {n}


class Model(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale = float(torch.linspace(1.0, 2.0, n)[-1].item())  # a value read in __init__ (SwinMLP)
        self.shift = torch.ones(n)  # a plain tensor attribute: neither parameter nor buffer
        self.lin = torch.nn.Linear(n, n)

    def forward(self, x):
        y = self.lin(x) * self.scale + self.shift
        return {body}


def get_inputs():
    return [torch.randn(4, n)]


def get_init_inputs():
    return [n]
"""


def test_a_model_that_reads_values_in_init_or_keeps_plain_tensors_passes_its_gate(tmp_path, run_params):
    """Issue 43: SwinMLP's ``.item()`` in ``__init__`` crashed init on the meta device with a
    traceback, and a plain tensor attribute stayed on meta in the reference: built on the inputs'
    device instead, v0 passes on the CPU."""
    src = tmp_path / "swinlike.py"
    src.write_text(SYNTHETIC.format(n=64, body="y"))
    assert main(["init", str(tmp_path / "ws"), "--kernelbench", str(src)]) == 0
    ws = tmp_path / "ws"
    corr, df, _ = run_version(ws, ws / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path / "out")
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), corr["error"]


def test_a_model_whose_float32_misses_kernelbenchs_tolerance_gets_the_one_it_meets(tmp_path, capsys, run_params):
    """Issue 43 (Mamba2: its own fp32 forward 5e-3 from float64): the tolerance it meets twice over
    is written and said, so v0 passes its gate instead of being "incorrect"."""
    src = tmp_path / "cancels.py"
    src.write_text(SYNTHETIC.format(n=64, body="(y * 1e4 + 0.1) - y * 1e4"))  # cancellation: fp32 loses 5e-4 of 0.1
    assert main(["init", str(tmp_path / "ws"), "--kernelbench", str(src)]) == 0
    out = capsys.readouterr().out
    tol = yaml.safe_load((tmp_path / "ws" / "target.yaml").read_text())["tolerances"]["float32"]
    assert 1e-4 < tol["atol"] == tol["rtol"] <= 5e-2 and f"atol = rtol = {tol['atol']:g}" in out, out
    ws = tmp_path / "ws"
    corr, _, _ = run_version(ws, ws / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path / "out")
    assert corr["status"] == "pass", corr["error"]
    # the record names the tolerance applied (an H200's said 1e-4 for a config whose output was checked at 1e-2)
    assert {(c["atol"], c["rtol"]) for c in corr["configs"]} == {(tol["atol"], tol["rtol"])}, corr["configs"]


def test_the_cpu_config_cuts_no_structural_size_to_one():
    """Issue 43: halving the largest size until the CPU's budget cut MinGPT's seq_len 512 and
    n_head 8 to 1 (its causal mask never exercised, one head), and EfficientNet's expand_ratio 6
    to 1, so the CPU config took other branches than the GPU's."""
    p = KB / "43_MinGPTCausalAttention.py"
    small = kw.cpu_sizes(Problem(p), kw.sizes_of(kw.run_file(p)))
    assert small["n_head"] == 8 and min(small["seq_len"], small["batch_size"]) >= kw.FLOOR, small


def test_sizes_a_forward_ties_are_halved_together_on_the_cpu(tmp_path, capsys):
    """Level 2's 3_ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU (issue 43): its LayerNorm normalises the
    last dimension, sized out_channels, which equals the transposed convolution's output width
    (2 x width) only at the file's own sizes. Meta cannot run its forward, so halving one size at a
    time broke the tie unseen and init refused it; every size is now halved together instead."""
    src = KB / "3_ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU.py"
    assert main(["init", str(tmp_path / "ws"), "--kernelbench", str(src)]) == 0, capsys.readouterr().err
    small = yaml.safe_load((tmp_path / "ws" / "target.yaml").read_text())["cpu_configs"][0]
    assert small["out_channels"] == 2 * small["width"] and small["batch_size"] < 32, small


def test_a_list_of_sizes_is_halved_element_by_element(tmp_path, capsys):
    """Level 3's 1_MLP (issue 43): ``layer_sizes = [16384, 16384]`` was never scaled, so init
    refused it; each element is a size of its own now (``layer_sizes_0``, ...), written back as the
    list, and the CPU config takes a small MLP of the same depth."""
    assert main(["init", str(tmp_path / "ws"), "--kernelbench", str(KB / "1_MLP.py")]) == 0, capsys.readouterr().err
    doc = yaml.safe_load((tmp_path / "ws" / "target.yaml").read_text())
    assert doc["configs"][0]["layer_sizes_1"] == 16384
    small = doc["cpu_configs"][0]
    assert {"layer_sizes_0", "layer_sizes_1"} <= set(small) and small["layer_sizes_0"] < 16384, small


def test_a_tuple_of_sizes_tied_to_another_is_halved_with_it(tmp_path, capsys):
    """Level 1's 100_HingeLoss: ``input_shape = (32768,)`` is as wide as its batch, and its forward
    only broadcasts while the two are equal; the tuple was never scaled, so halving the batch broke
    the forward and init refused it. Its element is a size of its own now, written back as a tuple,
    halved with the batch; a tuple made of other sizes is none (``bias_shape``)."""
    assert main(["init", str(tmp_path / "ws"), "--kernelbench", str(KB / "100_HingeLoss.py")]) == 0, (
        capsys.readouterr().err
    )
    doc = yaml.safe_load((tmp_path / "ws" / "target.yaml").read_text())
    assert doc["configs"][0]["input_shape_0"] == 32768
    small = doc["cpu_configs"][0]
    assert small["input_shape_0"] == small["batch_size"] < 32768, small
    derived = kw.sizes_of(kw.run_file(KB / "3_ConvTranspose3d_Sum_LayerNorm_AvgPool_GELU.py"))
    assert not any(k.startswith(("bias_shape", "norm_shape")) for k in derived), derived


def test_a_model_whose_float32_tail_shows_only_at_its_own_sizes_is_one_line(tmp_path, capsys):
    """Level 3's 49_Mamba2ReturnFinalState (issue 43): its own float32 forward met KernelBench's
    1e-4 on init's first draw and missed it on the third; chosen on 16 draws of its CPU sizes, 2e-3
    was written, and on an H200 at the file's own sizes its own v0 failed the gate, 450 of 16.8M
    elements outside. At its own sizes on the CPU one draw is up to 0.40 off float64 (5e-5 of the
    elements over 1e-3): init runs one draw there and refuses it in one line naming those sizes and
    what to do, instead of a v0 that fails where the GPU runs it."""
    src = KB / "49_Mamba2ReturnFinalState.py"
    assert main(["init", str(tmp_path / "ws"), "--kernelbench", str(src)]) == 2  # init's refusals
    said = capsys.readouterr().err
    assert "at the file's own sizes {'batch_size': 2048" in said and "on the CPU sizes" in said, said
    assert "draw its inputs in float64" in said and len(said.strip().splitlines()) == 1, said
    assert not (tmp_path / "ws").exists()


KEEPS_STATE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(2 * n, n)
        self.hidden = torch.zeros(batch_size, n)  # state kept between calls, as level 3's VanillaRNN

    def forward(self, x, h):
        self.hidden.copy_(h)
        self.hidden = torch.tanh(self.lin(torch.cat((x, self.hidden), dim=1)))
        return self.hidden * 2  # a new tensor, as VanillaRNN's h2o(self.hidden)


batch_size = 8
n = 64


def get_inputs():
    return [torch.rand(batch_size, n), torch.rand(batch_size, n)]


def get_init_inputs():
    return [n]
"""


def test_a_model_that_keeps_state_is_checked_draw_after_draw(tmp_path, capsys):
    """Level 3's 33_VanillaRNN: init's float64 run left a float64 hidden state in the Model it shares
    with the next draw's float32 run (\"mat1 and mat2 must have the same dtype\"); each float64 run
    has a Model of its own."""
    src = tmp_path / "rnn.py"
    src.write_text(KEEPS_STATE)
    assert main(["init", str(tmp_path / "ws"), "--kernelbench", str(src)]) == 0, capsys.readouterr().err


ZERO_AND_TWICE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.nn.functional.pad(x, pad) * 2


batch_size = 4096
shape = (1024,)  # assigned again below, from another size: no size of its own
shape = (batch_size, 64)
pad = (0, 0)  # a zero is no size to halve


def get_inputs():
    return [torch.rand(*shape)]


def get_init_inputs():
    return []
"""

SEEDLESS_STATE = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.h0 = torch.randn(8, 16)  # drawn without a seed, and no weight

    def forward(self, x):
        return x + self.h0


def get_inputs():
    return [torch.rand(8, 16)]


def get_init_inputs():
    return []
"""


def test_sizes_halve_to_a_config_with_zeros_and_names_assigned_twice(tmp_path, capsys):
    """A review: a zero in a tuple of sizes was halved forever (init hung), and a name whose last
    assignment is made of other sizes gave sizes that changed nothing."""
    src = tmp_path / "padded.py"
    src.write_text(ZERO_AND_TWICE)
    assert main(["init", str(tmp_path / "ws"), "--kernelbench", str(src)]) == 0, capsys.readouterr().err
    small = yaml.safe_load((tmp_path / "ws" / "target.yaml").read_text())["cpu_configs"][0]
    assert small["pad_0"] == small["pad_1"] == 0 and not any(k.startswith("shape") for k in small), small
    assert small["batch_size"] < 4096, small


def test_a_tensor_drawn_without_a_seed_in_init_is_one_line(tmp_path, capsys):
    """A review: the reference and v0 each build the Model, so such a tensor differs between them;
    init says so (it said "float32 over 5% from float64" once each float64 run had its own Model)."""
    src = tmp_path / "seedless.py"
    src.write_text(SEEDLESS_STATE)
    assert main(["init", str(tmp_path / "ws"), "--kernelbench", str(src)]) != 0
    assert "drawn without a seed in __init__" in capsys.readouterr().err


REPOINTS_ITS_WEIGHT = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = nn.Linear(n, n)

    def forward(self, x):
        with torch.no_grad():  # what cuDNN's flatten_parameters does to an RNN's weights on a GPU
            self.lin.weight.set_(self.lin.weight.clone())
        return self.lin(x)


n = 32


def get_inputs():
    return [torch.rand(4, n)]


def get_init_inputs():
    return [n]
"""


def test_each_call_reads_its_own_weights_when_the_model_repoints_them(tmp_path):
    """nn.LSTM and nn.GRU on a GPU flatten their weights in a forward whose weights changed
    (torch._cudnn_rnn_flatten_weight: copied into one buffer, each weight tensor pointed at it by
    set_). Under functional_call those tensors are the call's inputs, views of the arena: once
    re-pointed, the next draw written into the arena was never read, and on the H200 level 3's
    GRU, GRUHidden, LSTMHn, LSTMCn and LSTMBidirectional failed their own v0 on 99.9% of elements.
    Emulated here (the CPU never flattens): the next draw written in place into the same tensors,
    as the arena gets it, is what the forward reads."""
    src = tmp_path / "repoints.py"
    src.write_text(REPOINTS_ITS_WEIGHT)
    problem = Problem(src)
    drawn = problem.inputs(0, n=32)
    tensors = [k for k, t in drawn.items() if isinstance(t, torch.Tensor)]
    arena = torch.cat([drawn[k].reshape(-1) for k in tensors])  # every input a view of one buffer, as kopt's arena
    held, at = dict(drawn), 0
    for k in tensors:
        held[k] = arena[at : at + drawn[k].numel()].view(drawn[k].shape)
        at += drawn[k].numel()
    problem.reference(**held)
    nxt = problem.inputs(1, n=32)
    arena.copy_(torch.cat([nxt[k].reshape(-1) for k in tensors]))  # the next draw, written into the arena
    assert torch.equal(problem.reference(**held), Problem(src).reference(**nxt))


GROWS_WITH_SIZE = """import torch

n = 1024


class Model(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.lin = torch.nn.Linear(n, n)

    def forward(self, x):
        y = self.lin(x)
        c = n * n * 2.0  # a cancellation that grows with the size: float32 loses about c * 6e-8 of 0.1
        return (y * c + 0.1) - y * c


def get_inputs():
    return [torch.randn(4, n)]


def get_init_inputs():
    return [n]
"""


@pytest.mark.parametrize("host_bytes, refused", [(None, True), (1 << 20, False)])
def test_the_own_sizes_check_refuses_a_tail_and_is_skipped_where_the_host_cannot_run_it(
    tmp_path, capsys, monkeypatch, host_bytes, refused
):
    """Within a wider tolerance on the CPU sizes (n=128), 9% off at the file's own (n=1024): one
    line. Where the host lacks the memory for the file's own sizes (a review: a forward's working
    memory beyond the host's made init refuse a Model the GPU runs), the check is skipped, said."""
    monkeypatch.setattr(kw, "own_sizes_device", lambda: "cpu")  # the host's memory, also where a GPU is
    if host_bytes is not None:
        monkeypatch.setattr(kw, "host_available_bytes", lambda: host_bytes)
    src = tmp_path / "grows.py"
    src.write_text(GROWS_WITH_SIZE)
    code = main(["init", str(tmp_path / "ws"), "--kernelbench", str(src)])
    said = capsys.readouterr()
    if refused:
        assert code == 2 and "at the file's own sizes {'n': 1024}" in said.err, said
    else:
        assert code == 0 and "not checked at the file's own sizes" in said.out and "too many" in said.out, said


MILD_GROWTH = GROWS_WITH_SIZE.replace("n * n * 2.0", "n * n / 200.0")  # 6e-6 off at n=128, 1.4e-3 at 1024


def test_a_model_within_kernelbenchs_tolerance_only_on_its_cpu_sizes_gets_the_one_its_own_sizes_meet(
    tmp_path, capsys, monkeypatch
):
    """Level 2's Gemm_Divide_Sum_Scaling and level 3's UNetSoftmax met 1e-4 on their CPU sizes and
    missed it on an H200 at their own (21 of 1024 and 477 of 1M elements): where a GPU is here, init
    runs v0's gate's three draws there for every problem and takes the tolerance they meet twice
    over. The GPU emulated by the CPU (tests/gpu/test_gpu_formats.py runs it for real); with none,
    it says the file's own sizes were not checked."""
    src = tmp_path / "mild.py"
    src.write_text(MILD_GROWTH)
    monkeypatch.setattr(kw, "own_sizes_device", lambda: "cpu")
    assert main(["init", str(tmp_path / "cpu"), "--kernelbench", str(src)]) == 0
    said = capsys.readouterr().out
    assert "KernelBench's (fp32 1e-4" in said and "not checked at the file's own sizes (no GPU here" in said, said
    monkeypatch.setattr(kw, "own_sizes_device", lambda: "cuda")
    draws = []
    monkeypatch.setattr(
        kw, "_in_child", lambda args: draws.append(args["draws"]) or kw._worst_at(**{**args, "device": "cpu"})
    )
    assert main(["init", str(tmp_path / "gpu"), "--kernelbench", str(src)]) == 0
    said = capsys.readouterr().out
    assert "float32 atol = rtol = 0.005, not KernelBench's 0.0001" in said, said
    # three missed 1e-4 (on an H200 Gemm_Divide_Sum_Scaling's gate seeds reached 3x init's three): sixteen
    assert "at the file's own sizes (16 draws, on the GPU)" in said and draws == [[16, 17, 18], kw.OWN_SIZE_MORE], said
    draws.clear()
    src.write_text(GROWS_WITH_SIZE.replace("n * n * 2.0", "n * n / 2e6"))  # within 1e-4 at every size
    assert main(["init", str(tmp_path / "gpu_ok"), "--kernelbench", str(src)]) == 0
    said = capsys.readouterr().out
    assert "(3 draws, on the GPU)" in said and draws == [[16, 17, 18]], (draws, said)
    doc = yaml.safe_load((tmp_path / "gpu" / "target.yaml").read_text())
    assert doc["tolerances"]["float32"] == {"atol": 0.005, "rtol": 0.005}, doc["tolerances"]


def test_the_run_at_a_files_own_sizes_in_a_child_process_gives_what_it_gives_here(tmp_path):
    """On a GPU the draws at the file's own sizes run in a child of their own (init's process keeps
    no CUDA context): the same figure through the child as here, and a failure there is a reason,
    not an error."""
    src = tmp_path / "mild.py"
    src.write_text(MILD_GROWTH)
    args = {"path": str(src), "sizes": {"n": 512}, "draws": [16, 17], "source": str(src), "device": "cpu", "n": 0}
    here = kw._worst_at(**args)
    assert here[0] > 0 and kw._in_child(args) == here, here
    worst, why = kw._in_child({**args, "sizes": {"n": "no size"}})
    assert worst is None and why.startswith("its run failed (") and "Error" in why, why


def test_the_worst_gap_follows_allclose_on_nan_and_infinities():
    """A NaN anywhere is the worst gap (Python's max drops a NaN that is not first); equal
    infinities are none, as torch.allclose has them; meeting t twice over is allclose at t / 2."""
    ok = (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0], dtype=torch.float64))
    nan = (torch.tensor([1.0, float("nan")]), torch.tensor([1.0, 2.0], dtype=torch.float64))
    inf = (torch.tensor([-float("inf"), 2.0]), torch.tensor([-float("inf"), 2.0], dtype=torch.float64))
    assert kw._worst([ok, nan]) == kw._worst([nan, ok]) == float("inf") and kw._worst([inf, ok]) == 0.0
    both = (torch.tensor([1.0, float("nan")]), torch.tensor([1.0, float("nan")], dtype=torch.float64))
    assert kw._worst([both, ok]) == 0.0  # NaN where float64 has NaN: the gate's equal_nan
    off = (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0003], dtype=torch.float64))  # 1e-4 of 1 + |b|
    for pairs in ([ok, nan], [nan, ok], [inf, ok], [ok, off], [both, ok]):
        for t in (1e-4, 2e-4, 5e-2):
            close = all(torch.allclose(a.double(), e, rtol=t / 2, atol=t / 2, equal_nan=True) for a, e in pairs)
            assert kw._meets(kw._worst(pairs), t) is close, (pairs, t)
