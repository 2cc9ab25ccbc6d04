"""`kopt init --gpumode`: gpu-mode reference-kernels problems (tests/fixtures/gpumode/, verbatim)
made into workspaces: task.yml's specs as configs, generate_input fed kopt's seeds, the output
ref_kernel writes found by identity, check_implementation's tolerance; their submission.py as v0
and a Triton custom_kernel as v1, through the gate on the CPU (their "cuda" tensors made on the
harness's device); what cannot be mapped is one line and leaves nothing."""

from __future__ import annotations

import math
import shutil

import pytest
import torch
import yaml

from kopt.cli import main
from kopt.formats import gpumode_workspace as gw
from kopt.formats.gpumode import Problem, ProblemError, on_the_harness_device
from tests.helpers import FIXTURES, copy_tree, run_version

GM = FIXTURES / "gpumode" / "pmpp_v2"


@pytest.fixture(scope="module")
def vectoradd_made(tmp_path_factory):
    """vectoradd_py made a workspace by kopt init once for this file's tests, which read the same
    workspace (6-11 s an init on the CPU: it runs the problem's generate_input and ref_kernel)."""
    ws = tmp_path_factory.mktemp("vectoradd") / "ws"
    gw.init(ws, GM / "vectoradd_py")
    return ws


@pytest.fixture
def vectoradd(vectoradd_made, tmp_path):
    """A test's own copy of that workspace, to change."""
    return copy_tree(vectoradd_made, tmp_path / "ws")


def test_a_problem_becomes_a_workspace_with_its_specs_and_tolerance(tmp_path, capsys):
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--gpumode", str(GM / "grayscale_py")]) == 0
    said = capsys.readouterr().out
    for name in ("reference.py", "task.py", "utils.py", "task.yml"):
        assert (ws / "problem" / name).is_file()
    assert (ws / "kernels" / "v0.py").read_text() == (GM / "grayscale_py" / "submission.py").read_text()
    target = yaml.safe_load((ws / "target.yaml").read_text())
    assert target["configs"][0] == {"size": 512} and len(target["configs"]) == 6  # benchmarks, seeds dropped
    assert target["cpu_configs"] == [{"size": 128}, {"size": 256}, {"size": 512}]  # tests
    assert target["tolerances"]["default"] == {"rtol": 1e-4, "atol": 1e-4}  # make_match_reference(rtol=, atol=)
    assert target["tolerances"]["float16"]["rtol"] == 1e-3  # one rounding of a half-precision output
    assert "classes by ['size']" in said and "make_match_reference's: rtol 0.0001, atol 0.0001" in said


def test_the_data_is_named_by_position_and_the_output_is_the_buffer_ref_kernel_writes(vectoradd):
    p = Problem(vectoradd / "problem")
    with torch.device("cpu"):
        got = p.setup(7, size=64)
        again = p.setup(7, size=64)
    a = got["inputs"]
    assert list(a) == ["data0", "data1", "data2"] and got["outputs"] == ["data2"]
    assert a["data0"].dtype == torch.float16 and a["data0"].device.type == "cpu"  # "cuda" in the file
    assert torch.equal(a["data0"], again["inputs"]["data0"])  # the seed decides the draw
    assert torch.equal(p.reference(**a), a["data0"] + a["data1"])
    with on_the_harness_device():
        assert torch.cuda.is_available() or torch.Generator(device="cuda").device.type == "cpu"


@pytest.mark.parametrize("version", ["submission", "triton"])
def test_its_submission_and_a_triton_custom_kernel_pass_the_gate_on_the_cpu(tmp_path, run_params, version, vectoradd):
    ws = vectoradd
    kernel = ws / "kernels" / "v0.py"
    if version == "triton":
        kernel = ws / "kernels" / "v1.py"
        shutil.copyfile(GM / "vectoradd_py" / "solutions" / "submission_triton.py", kernel)
    corr, df, _ = run_version(ws, kernel, {**run_params, "device": "cpu"}, tmp_path / "out")
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), (corr.get("error"), list(df["error"]))


def test_a_custom_kernel_that_skips_the_output_is_incorrect(tmp_path, run_params, vectoradd):
    ws = vectoradd
    (ws / "kernels" / "v1.py").write_text("def custom_kernel(data):\n    A, B, C = data\n    return C\n")
    corr, _, _ = run_version(ws, ws / "kernels" / "v1.py", {**run_params, "device": "cpu"}, tmp_path / "out")
    assert corr["status"] == "incorrect" and "NaN" in corr["error"], corr["error"]


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda d: (d / "task.yml").write_text("files: []\ntests: []\n"), "no benchmarks"),
        (lambda d: (d / "submission.py").unlink(), "submission.py: missing"),
        (lambda d: (d / "task.yml").write_text("tests: [unclosed\n"), "not a readable task.yml"),
        (lambda d: (d / "task.yml").write_text("- a list\n"), "not a readable task.yml"),
    ],
)
def test_what_cannot_be_mapped_is_one_line_and_leaves_nothing(tmp_path, capsys, change, words):
    src = tmp_path / "pmpp_v2"
    shutil.copytree(GM, src)
    change(src / "vectoradd_py")
    assert main(["init", str(tmp_path / "ws"), "--gpumode", str(src / "vectoradd_py")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and words in err, err
    assert not (tmp_path / "ws").exists() and not list(tmp_path.glob(".ws*"))


def test_the_fixtures_are_from_the_mit_licensed_commit():
    assert "fec6e3c" in (FIXTURES / "gpumode" / "SOURCE.md").read_text()
    assert (FIXTURES / "gpumode" / "LICENSE").read_text().startswith("MIT License")
    with pytest.raises(ProblemError, match="no reference.py"):
        Problem(FIXTURES / "gpumode").mod  # noqa: B018 - a folder that is no problem


OWN = """import torch
from utils import verbose_allclose


def ref_kernel(data):
    x, out = data
    return x.sum()


def generate_input(size: int, seed: int):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    x = torch.rand(size, device="cuda", generator=gen).to("cuda")
    return x, torch.empty((), device="cuda").cuda()


def check_implementation(data, output):
    return verbose_allclose(output, ref_kernel(data), rtol=2e-5, atol=1e-6), ""
"""


def test_a_new_output_tensor_lands_in_the_problems_own_buffer_and_its_own_check_gives_the_tolerance(tmp_path):
    """vectorsum's shape: ref_kernel returns a new tensor, generate_input also makes an empty
    buffer of its shape (the kernels' output goes there, it is not an input); its own
    check_implementation names its tolerance; seeds alone told two specs apart."""
    src = tmp_path / "sum_py"
    src.mkdir()
    (src / "reference.py").write_text(OWN)
    shutil.copyfile(GM / "utils.py", tmp_path / "utils.py")
    (src / "submission.py").write_text("def custom_kernel(data):\n    return data[0].sum()\n")
    files = '[{"name": "reference.py", "source": "reference.py"}, {"name": "utils.py", "source": "../utils.py"}]'
    (src / "task.yml").write_text(
        f"files: {files}\ntests: [{{size: 64, seed: 1}}, {{size: 64, seed: 2}}]\nbenchmarks: [{{size: 4096, seed: 3}}]\n"
    )
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--gpumode", str(src)]) == 0
    target = yaml.safe_load((ws / "target.yaml").read_text())
    assert target["cpu_configs"] == [{"size": 64}] and target["tolerances"]["default"] == {"rtol": 2e-5, "atol": 1e-6}
    with torch.device("cpu"):
        got = Problem(ws / "problem").setup(5, size=64)
    assert got["outputs"] == ["data1"]  # not an input that differs from draw to draw


def test_a_spec_that_generate_input_does_not_take_is_one_line(tmp_path, capsys):
    src = tmp_path / "pmpp_v2"
    shutil.copytree(GM, src)
    yml = src / "vectoradd_py" / "task.yml"
    yml.write_text(yml.read_text().replace('{"size": 1024, "seed": 31232}', '{"size": 1024, "rows": 3, "seed": 31232}'))
    assert main(["init", str(tmp_path / "ws"), "--gpumode", str(src / "vectoradd_py")]) == 2
    assert "name different arguments" in capsys.readouterr().err


# --- synthetic problems: what ref_kernel returns, and how the kernels' outputs reach those names ---

INPUT = """import torch


def generate_input(n: int, seed: int):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    a = torch.randn(n, n, device="cuda", generator=gen)
    b = torch.randn(n, n, device="cuda", generator=gen)
    return {returns}


"""
STUB = "def custom_kernel(data):\n    return data\n"  # a submission init only reads


def _problem(tmp_path, reference: str, submission: str, name: str = "p_py"):
    """A gpu-mode problem folder in tmp_path: its reference.py and submission.py, the fixtures'
    utils.py beside it (as ``../utils.py``), two tests and a benchmark of one size each."""
    src = tmp_path / name
    src.mkdir()
    (src / "reference.py").write_text(reference)
    (src / "submission.py").write_text(submission)
    shutil.copyfile(GM / "utils.py", tmp_path / "utils.py")
    files = '[{"name": "reference.py", "source": "reference.py"}, {"name": "utils.py", "source": "../utils.py"}]'
    (src / "task.yml").write_text(f"files: {files}\ntests: [{{n: 8, seed: 1}}]\nbenchmarks: [{{n: 16, seed: 3}}]\n")
    return src


def _outputs(ws, **spec) -> list[str]:
    with torch.device("cpu"):
        return Problem(ws / "problem").setup(5, **(spec or {"n": 8}))["outputs"]


def _gate(ws, kernel, run_params, tmp_path) -> dict:
    corr, _, _ = run_version(ws, kernel, {**run_params, "device": "cpu"}, tmp_path / "out")
    return corr


MATMUL = INPUT.format(returns="a, b") + (
    "def ref_kernel(data):\n    a, b = data\n    return a @ b\n\n\n"
    "from utils import make_match_reference, verbose_allclose  # noqa: E402\n\n"
    "check_implementation = make_match_reference(ref_kernel, rtol=1e-4, atol=1e-4)\n"
)


def test_a_new_tensor_is_out_not_the_input_of_its_shape_and_the_submission_passes(tmp_path, run_params, capsys):
    """pmpp/matmul's shape: ref_kernel returns a new a @ b, and b (an input it reads) has that shape
    and dtype: the output is a buffer of its own, never b."""
    src = _problem(tmp_path, MATMUL, "def custom_kernel(data):\n    a, b = data\n    return a @ b\n")
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--gpumode", str(src)]) == 0
    assert "outputs (ref_kernel's, in its order, for {'n': 8}): ['out']" in capsys.readouterr().out
    assert _outputs(ws) == ["out"]
    corr = _gate(ws, ws / "kernels" / "v0.py", run_params, tmp_path)
    assert corr["status"] == "pass", corr.get("error")


@pytest.mark.parametrize(
    "body, outputs",
    [
        ("a, b = data\n    return a * 2", ["data1"]),  # b: a trailing buffer it never reads
        ("a, b = data\n    return a + b", ["out"]),  # b is read: an input
        ("a, b = data\n    b[...] = 0\n    return a * 2", ["data1"]),  # written, never read
        ("a, b = data\n    return a * 2 + b.isnan().any()", ["out"]),  # read only where it is NaN
        ("a, b = data\n    return a * (b > 0.25)", ["out"]),  # read only through a comparison: False for 0 and NaN
        ("a, b = data\n    return (a * 2).double()", ["data1"]),  # another float's width: as gpu-mode compares
        ("a, b = data\n    return (a * 2).long()", ["out"]),  # an integer: b cannot hold it
    ],
)
def test_a_trailing_buffer_is_the_output_only_where_ref_kernel_provably_never_reads_it(tmp_path, body, outputs):
    src = _problem(tmp_path, INPUT.format(returns="a, b") + f"def ref_kernel(data):\n    {body}\n", STUB)
    gw.init(tmp_path / "ws", src)
    assert _outputs(tmp_path / "ws") == outputs


SEVERAL = """import torch


def generate_input(n: int, seed: int):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    x = torch.randn(n, 2 * n, device="cuda", generator=gen)
    return x, torch.empty(n, 2 * n, device="cuda"), torch.empty(n, 2, device="cuda")


def ref_kernel(data):
    x, q, s = data
    s[...] = x.reshape(len(x), 2, -1).abs().amax(-1)
    q[...] = x / s.repeat_interleave(x.shape[1] // 2, dim=1)
    return {returns}


def check_implementation(data, output):
    from utils import verbose_allclose

    return not any(verbose_allclose(g, w, rtol=1e-5, atol=1e-6) for g, w in zip(output, ref_kernel(data))), ""
"""
SUBMISSION = """import torch


def _impl(data):
    x, q, s = data
    s[...] = x.reshape(len(x), 2, -1).abs().amax(-1)
    q[...] = x / s.repeat_interleave(x.shape[1] // 2, dim=1)
    return {returns}


{bind}
"""
BY_DEF = "def custom_kernel(data):\n    return _impl(data)"


@pytest.mark.parametrize(
    "returns, outputs",
    [
        ("q, s", ["data1", "data2"]),  # helion/fp8_quant's shape: both written in place, in return order
        ("s, q", ["data2", "data1"]),
        ("s.clone(), x.sum(1)", ["data2", "out1"]),  # new tensors: a trailing unread buffer of its shape, else its own
    ],
)
def test_a_tuple_of_outputs_is_named_in_return_order(tmp_path, returns, outputs):
    src = _problem(tmp_path, SEVERAL.format(returns=returns), SUBMISSION.format(returns=returns, bind=BY_DEF))
    gw.init(tmp_path / "ws", src)
    assert _outputs(tmp_path / "ws") == outputs


@pytest.mark.parametrize(
    "returns, bind, status",
    [
        ("q, s", BY_DEF, "pass"),
        ("q.clone(), s.clone()", "custom_kernel = torch.compile(_impl, backend='eager')", "pass"),  # sort_py's
        ("s, q", BY_DEF, "incorrect"),  # the tuple in another order than ref_kernel's
    ],
)
def test_a_submissions_tuple_reaches_the_outputs_in_ref_kernels_order(tmp_path, run_params, returns, bind, status):
    src = _problem(tmp_path, SEVERAL.format(returns="q, s"), SUBMISSION.format(returns=returns, bind=bind))
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--gpumode", str(src)]) == 0
    corr = _gate(ws, ws / "kernels" / "v0.py", run_params, tmp_path)
    assert corr["status"] == status, corr.get("error")


@pytest.mark.parametrize(
    "submission",
    [
        "import torch\n\n\ndef _k(data):\n    return data[0] @ data[1]\n\n\ncustom_kernel = torch.compile(_k)\n",
        "def _k(data):\n    return data[0] @ data[1]\n\n\ncustom_kernel: object = _k\n",
        "from operator import itemgetter as custom_kernel\n",
    ],
)
def test_custom_kernel_bound_by_an_assignment_or_an_import_is_a_submission(tmp_path, submission):
    src = _problem(tmp_path, MATMUL, submission)
    gw.init(tmp_path / "ws", src)
    assert (tmp_path / "ws" / "kernels" / "v0.py").read_text() == submission


WIDEST = """import torch
from utils import verbose_allclose


def ref_kernel(data):
    a, b = data
    return a @ b, a - b


def check_implementation(data, output):
    got_p, got_d = output
    want_p, want_d = ref_kernel(data)
    return not (verbose_allclose(got_p, want_p, rtol=1e-3, atol=1e-5) or verbose_allclose(got_d, want_d, rtol=1e-4, atol=2e-2)), ""
"""


def test_several_comparisons_give_the_widest_tolerance(tmp_path, capsys):
    src = _problem(tmp_path, INPUT.format(returns="a, b") + WIDEST, STUB)
    assert main(["init", str(tmp_path / "ws"), "--gpumode", str(src)]) == 0
    target = yaml.safe_load((tmp_path / "ws" / "target.yaml").read_text())
    assert target["tolerances"]["default"] == {"rtol": 1e-3, "atol": 2e-2}
    assert "(the widest of 2 comparisons)" in capsys.readouterr().out
    assert _outputs(tmp_path / "ws") == ["out0", "out1"]


@pytest.mark.parametrize(
    "body, words",
    [
        (
            "return data[0] @ data[1], object()",
            "reference.py: ref_kernel returns a tuple whose element 1 is of type object",
        ),
        ("return [float(data[0].sum())]", "ref_kernel returns a list whose element 0 is of type float"),
        ("return ()", "ref_kernel returns an empty tuple"),
        ("return data[1], data[1]", "ref_kernel returns one element of its data twice"),
    ],
)
def test_what_ref_kernel_returns_that_cannot_be_mapped_is_one_line_naming_the_users_file(tmp_path, capsys, body, words):
    src = _problem(tmp_path, INPUT.format(returns="a, b") + f"def ref_kernel(data):\n    {body}\n", STUB)
    assert main(["init", str(tmp_path / "ws"), "--gpumode", str(src)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"{src / 'reference.py'}: " in err and words in err, err
    assert not (tmp_path / "ws").exists() and not list(tmp_path.glob(".ws*"))


def test_tensors_inside_dicts_lists_and_tuples_are_inputs_of_their_own(tmp_path, run_params, capsys):
    """bioml/trimul's shape (issue 43): the weights in a dict beside the input, and here a list in a
    tuple too. Each tensor is an input of its own (a fresh draw, float64 for the reference, the
    mutation check), the data packed again around them; the submission passes, one that writes a
    weight is caught, and a tensor inside another object is still one line."""
    # 'g' drawn from torch's own generator, as trimul draws its weights: seeded by kopt with the seed
    data = "a, {'w': b, 'more': (1, [b * 2]), 'g': torch.randn(n, device='cuda')}, {'dim': 8}"
    ref = "def ref_kernel(data):\n    a, w, cfg = data\n    return a @ w['w'] + w['more'][1][0] * cfg['dim'] + w['g']\n"
    check = (
        "\n\nfrom utils import make_match_reference  # noqa: E402\n\n"
        "check_implementation = make_match_reference(ref_kernel, rtol=1e-4, atol=1e-4)\n"
    )
    src = _problem(tmp_path, INPUT.format(returns=data) + ref + check, ref.replace("ref_kernel", "custom_kernel"))
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--gpumode", str(src)]) == 0, capsys.readouterr().err
    with torch.device("cpu"):
        got = Problem(ws / "problem").setup(5, n=8)
    assert {"data1_w", "data1_more_1_0"} <= set(got["inputs"]) and got["inputs"]["data1"]["more"][0] == 1
    corr, df, _ = run_version(ws, ws / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path / "v0")
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), (corr.get("error"), list(df["error"]))
    writes = ref.replace("ref_kernel", "custom_kernel").replace("    a, w", "    data[1]['w'].add_(1)\n    a, w")
    (ws / "kernels" / "v1.py").write_text(writes)
    corr, _, _ = run_version(ws, ws / "kernels" / "v1.py", {**run_params, "device": "cpu"}, tmp_path / "v1")
    assert corr["status"] != "pass" and "data1_w" in corr["error"], corr["error"]
    other = "a, __import__('types').SimpleNamespace(w=b), 8"
    (tmp_path / "o").mkdir()
    src = _problem(tmp_path / "o", INPUT.format(returns=other) + "def ref_kernel(data):\n    return data[0]\n", STUB)
    assert main(["init", str(tmp_path / "ws2"), "--gpumode", str(src)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.count("\n") == 0
        and f"{src / 'reference.py'}: generate_input's element 1 is a SimpleNamespace holding" in err
    )


@pytest.mark.parametrize(
    "reference, submission, words",
    [
        (MATMUL, "def kernel(data):\n    return data\n", "submission.py: defines no custom_kernel(data)"),
        (MATMUL, "def custom_kernel(data:\n", "submission.py: does not parse (line 1"),
    ],
)
def test_a_submission_or_tolerance_that_cannot_be_mapped_is_one_line(tmp_path, capsys, reference, submission, words):
    src = _problem(tmp_path, reference, submission)
    assert main(["init", str(tmp_path / "ws"), "--gpumode", str(src)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and words in err, err
    assert not (tmp_path / "ws").exists()


@pytest.mark.parametrize(
    "name, listing, task_extra, submission, words",
    [
        ("ag_py", "gpus: [MI300x8]", "", STUB, "a multi-GPU problem (its competition ran it on MI300x8)"),
        ("ag_py", "gpus: [B200]", "multi_gpu: true\n", STUB, "a multi-GPU problem (its competition ran it on B200)"),
        (
            "mm_py",
            "gpus: [MI300]",
            "",
            "import kopt_no_such_module\n" + STUB,
            "its files import kopt_no_such_module, not installed here (pip install kopt_no_such_module); it needs "
            "an AMD Instinct GPU with ROCm (MI300)",
        ),
        ("nvfp4_gemv", "gpus: [NVIDIA]", "", STUB, "an FP4 problem: it needs FP4 tensor cores (NVIDIA Blackwell"),
    ],
)
def test_a_problem_this_machine_cannot_judge_is_one_line_naming_its_hardware(
    tmp_path, capsys, name, listing, task_extra, submission, words
):
    """Issue 43: multi-GPU, AMD-only and FP4 problems of reference-kernels, named from their
    competition's listing (problems/<competition>.yaml) and their task.yml; on a machine without
    FP4 tensor cores (CI's CPU) an FP4 problem is refused whatever it imports."""
    comp = tmp_path / "comp"
    comp.mkdir()
    src = _problem(comp, MATMUL, submission, name=name)
    (tmp_path / "comp.yaml").write_text(f"problems:\n  - directory: comp/{name}\n    {listing}\n")
    (src / "task.yml").write_text(task_extra + (src / "task.yml").read_text())
    assert main(["init", str(tmp_path / "ws"), "--gpumode", str(src)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and words in err, err
    assert not (tmp_path / "ws").exists()


def test_an_unread_trailing_buffer_is_zeroed_so_a_seed_repeats_its_draw(tmp_path, run_params, capsys):
    """pmpp_v2/vectorsum's shape: a torch.empty(1) after the input that ref_kernel never reads (it
    returns a new 0-d sum): its uninitialized bytes made setup() "not deterministic"; now zeroed."""
    data = "a, torch.rand(1, device='cuda')"  # unseeded: junk as uninitialized memory is
    check = "\n\nfrom utils import make_match_reference  # noqa: E402\n\ncheck_implementation = make_match_reference(ref_kernel, rtol=1e-4, atol=1e-4)\n"
    ref = "def ref_kernel(data):\n    return data[0].sum()\n"
    src = _problem(tmp_path, INPUT.format(returns=data) + ref + check, ref.replace("ref_kernel", "custom_kernel"))
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--gpumode", str(src)]) == 0
    assert (
        "; scratch (ref_kernel never reads them: zeroed for every call, never compared): ['data1']"
        in capsys.readouterr().out
    )
    with torch.device("cpu"):
        p = Problem(ws / "problem")
        one, two = p.setup(3, n=8), p.setup(3, n=8)
    assert one["outputs"] == ["out"] and not one["inputs"]["data1"].any() and not two["inputs"]["data1"].any()
    assert one["scratch"] == ["data1"]
    corr, _, _ = run_version(ws, ws / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path / "v0")
    assert corr["status"] == "pass", corr.get("error")
    # as pmpp_v2's submission does: its sum added into that buffer (zeroed again for every call), returned
    sums = "def custom_kernel(data):\n    data[1].add_(data[0].sum())\n    return data[1][0]\n"
    (ws / "kernels" / "v1.py").write_text(sums)
    assert _gate(ws, ws / "kernels" / "v1.py", run_params, tmp_path)["status"] == "pass"


ROW_DROPOUT = """import torch


def generate_input(n: int, seed: int):
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed)
    x = torch.randn(n, n, device="cuda", generator=gen)
    return x, torch.rand(n, 1, device="cuda", generator=gen)  # one draw per row: kept where over 0.25


def ref_kernel(data):
    x, r = data
    return x * (r > 0.25) / 0.75


from utils import make_match_reference  # noqa: E402

check_implementation = make_match_reference(ref_kernel, rtol=1e-4, atol=1e-4)
"""


def test_a_trailing_element_read_only_through_a_comparison_is_an_input_and_zeros_fail(tmp_path, run_params):
    """An adversary's problem: ``r > 0.25`` is False for 0 and for NaN alike, so the two fills
    took r for an unread trailing buffer: zeroed in every draw, the expected output was all zeros
    and a kernel returning zeros passed. The draw itself is now one of the runs compared."""
    honest = "def custom_kernel(data):\n    x, r = data\n    return x * (r > 0.25) / 0.75\n"
    src = _problem(tmp_path, ROW_DROPOUT, honest)
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--gpumode", str(src)]) == 0
    with torch.device("cpu"):
        drawn = Problem(ws / "problem").setup(3, n=8)
    assert drawn["scratch"] == [] and drawn["outputs"] == ["out"] and drawn["inputs"]["data1"].all()
    assert _gate(ws, ws / "kernels" / "v0.py", run_params, tmp_path)["status"] == "pass"
    (ws / "kernels" / "v1.py").write_text(
        "import torch\n\n\ndef custom_kernel(data):\n    return torch.zeros_like(data[0])\n"
    )
    assert _gate(ws, ws / "kernels" / "v1.py", run_params, tmp_path / "v1")["status"] == "incorrect"


def test_an_argument_some_specs_leave_out_takes_generate_inputs_default(tmp_path, capsys):
    """linalg's shape (qr, eigh, cholesky): a few tests add ``case`` to the arguments the others
    leave at its default; every config gets the column, the default where it was left out."""
    ref = MATMUL.replace(
        "def generate_input(n: int, seed: int):", "def generate_input(n: int, seed: int, scale: int = 1):"
    )
    src = _problem(tmp_path, ref, STUB)
    (src / "task.yml").write_text(
        (src / "task.yml")
        .read_text()
        .replace("tests: [{n: 8, seed: 1}]", "tests: [{n: 8, seed: 1}, {n: 8, scale: 2, seed: 2}]")
    )
    assert main(["init", str(tmp_path / "ws"), "--gpumode", str(src)]) == 0, capsys.readouterr().err
    doc = yaml.safe_load((tmp_path / "ws" / "target.yaml").read_text())
    assert doc["cpu_configs"] == [{"n": 8, "scale": 1}, {"n": 8, "scale": 2}] and doc["configs"] == [{"n": 16}]
    (src / "task.yml").write_text((src / "task.yml").read_text().replace("scale: 2", "other: 2"))
    assert main(["init", str(tmp_path / "ws2"), "--gpumode", str(src)]) == 2
    assert "generate_input has no default for those some leave out" in capsys.readouterr().err


PREFIX = (
    "import torch\nfrom utils import match_reference\n\n\n"
    "def generate_input(n: int, seed: int):\n"
    "    gen = torch.Generator(device='cuda')\n    gen.manual_seed(seed)\n"
    "    return torch.randn(n * n, device='cuda', generator=gen), torch.empty(n * n, device='cuda')\n\n\n"
    "def ref_kernel(data):\n    x, y = data\n    return torch.cumsum(x.to(torch.float64), dim=0)\n\n\n"
    "def check_implementation(data, output):\n    scale = {sized}.numel() ** 0.5\n"
    "    return match_reference(data, output, reference=ref_kernel, rtol=1e-5 * scale, atol=1e-5 * scale)\n"
)


@pytest.mark.parametrize(
    "sized, error, status", [("data[0]", 0.0, "pass"), ("data[0]", 3e-3, "incorrect"), ("output", 0.0, "pass")]
)
def test_a_tolerance_computed_at_run_time_is_evaluated_per_config(tmp_path, run_params, capsys, sized, error, status):
    """pmpp_v2's prefixsum: check_implementation scales its tolerance with the data's size, and its
    ref_kernel returns float64 for a float32 buffer the submission writes. The tolerance is
    check_implementation's own for each config's data (1e-5 * 8 at n = 8: 64 elements); a
    submission off by more fails; its float32 result lands in the buffer as gpu-mode compares it.
    A check that reads its output (as one of several outputs indexes it) is given ref_kernel's own
    (it was given None: "could not be evaluated")."""
    sub = f"import torch\n\n\ndef custom_kernel(data):\n    x, y = data\n    y[...] = torch.cumsum(x, 0) + {error}\n    return y\n"
    src = _problem(tmp_path, PREFIX.format(sized=sized), sub)
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--gpumode", str(src)]) == 0
    assert "computed at run time (rtol=1e-05 * scale, atol=1e-05 * scale)" in capsys.readouterr().out
    with torch.device("cpu"):
        got = Problem(ws / "problem").setup(5, n=8)
    assert got["outputs"] == ["data1"] and got["tolerance"] == pytest.approx({"rtol": 8e-5, "atol": 8e-5})
    corr = _gate(ws, ws / "kernels" / "v0.py", run_params, tmp_path)
    assert corr["status"] == status, corr.get("error")
    assert corr["configs"][0]["atol"] == pytest.approx(8e-5)


SIGNED = (
    INPUT.format(returns="a")
    + '''def ref_kernel(data):
    return data / data.norm(dim=1, keepdim=True)


def check_implementation(data, output):
    """Rows of unit length, each parallel to its input's row: unique only up to its sign."""
    if output.shape != data.shape:
        return False, f"shape {tuple(output.shape)}"
    unit = (output.norm(dim=1) - 1).abs().max().item()
    cos = ((output * data).sum(dim=1).abs() / data.norm(dim=1) - 1).abs().max().item()
    return (unit < 1e-5 and cos < 1e-5), f"unit {unit:.3g}, parallel {cos:.3g}"
'''
)


def test_a_check_of_the_outputs_properties_judges_every_call_itself(tmp_path, run_params, capsys):
    """linalg's shape (issue 43): check_implementation judges the output's properties and never
    reads ref_kernel's result, so an honest output of the other sign passes (the element-wise
    comparison refused it), and one that misses the property fails with the problem's own words."""
    flipped = "def custom_kernel(data):\n    return -data / data.norm(dim=1, keepdim=True)\n"
    src = _problem(tmp_path, SIGNED, flipped)
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--gpumode", str(src)]) == 0, capsys.readouterr().err
    assert "checks properties of the output" in capsys.readouterr().out
    assert "check_outputs = _problem.check" in (ws / "ref.py").read_text()
    corr, df, _ = run_version(ws, ws / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path / "v0")
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), (corr.get("error"), list(df["error"]))
    (ws / "kernels" / "v1.py").write_text("def custom_kernel(data):\n    return data / 2\n")
    corr, _, _ = run_version(ws, ws / "kernels" / "v1.py", {**run_params, "device": "cpu"}, tmp_path / "v1")
    assert corr["status"] == "incorrect" and "check_implementation: unit" in corr["error"], corr["error"]
    # without the check of its own (it reads ref_kernel's result), the other sign is wrong
    (src / "reference.py").write_text(
        SIGNED.replace("    if output.shape", "    ref_kernel(data)\n    if output.shape")
    )
    assert main(["init", str(tmp_path / "ws2"), "--gpumode", str(src)]) == 0, capsys.readouterr().err
    assert "check_outputs" not in (tmp_path / "ws2" / "ref.py").read_text()
    corr = _gate(tmp_path / "ws2", tmp_path / "ws2" / "kernels" / "v0.py", run_params, tmp_path)
    assert corr["status"] == "incorrect" and "outside atol" in corr["error"], corr["error"]


PHASED = """import torch
import torch.nn.functional as F

DTYPE = torch.bfloat16
DEVICE = "cuda"
ATOL = 1e-3
RTOL = 1e-2


def reference_forward(logits, targets):
    return F.cross_entropy(logits.float(), targets, reduction="none")


def reference_backward(logits, targets, grad_output):
    probs = torch.softmax(logits.float(), dim=-1)
    probs[torch.arange(logits.shape[0], device=logits.device), targets] -= 1.0
    return (probs * grad_output.unsqueeze(1)).to(logits.dtype)


def generate_inputs(batch_size, vocab_size, seed=42):
    torch.manual_seed(seed)
    logits = torch.randn(batch_size, vocab_size, dtype=DTYPE, device=DEVICE)
    targets = torch.randint(0, vocab_size, (batch_size,), device=DEVICE)
    grad_output = torch.randn(batch_size, dtype=torch.float32, device=DEVICE)
    return logits, targets, grad_output
"""


def test_a_problem_of_one_function_per_phase_is_judged_as_one_call_of_them_all(tmp_path, run_params, capsys):
    """princeton/cross_entropy's shape (issue 43): reference_forward and reference_backward,
    generate_inputs with the batch eval.py fixes, ATOL and RTOL; a submission's
    cross_entropy_forward and cross_entropy_backward. The GPU configs take eval.py's B, the CPU's a
    small batch; the submission passes, a wrong phase fails naming its output, a missing one is one
    line at init."""
    src = tmp_path / "ce_py"
    src.mkdir()
    (src / "reference.py").write_text(PHASED)
    (src / "eval.py").write_text("from reference import ATOL, RTOL\n\nB = 4_096\n")
    sub = PHASED.split("def generate_inputs")[0].replace("reference_", "cross_entropy_")
    (src / "submission.py").write_text(sub)
    files = '[{"name": "submission.py", "source": "@SUBMISSION@"}, {"name": "reference.py", "source": "reference.py"}]'
    (src / "task.yml").write_text(
        f"files: {files}\ntests: [{{vocab_size: 256}}, {{vocab_size: 512}}]\n"
        "benchmarks: [{vocab_size: 32000}, {vocab_size: 128256}]\n"
    )
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--gpumode", str(src)]) == 0, capsys.readouterr().err
    said = capsys.readouterr().out
    assert "batch_size: eval.py's B (4096) on the GPU, 8 on the CPU" in said and "ATOL 0.001, RTOL 0.01" in said
    target = yaml.safe_load((ws / "target.yaml").read_text())
    assert target["configs"][0] == {"batch_size": 4096, "vocab_size": 32000} and target["class_by"] == ["vocab_size"]
    assert target["cpu_configs"][1] == {"batch_size": 8, "vocab_size": 512}
    assert _outputs(ws, batch_size=8, vocab_size=256) == ["out0", "out1"]
    corr, df, _ = run_version(ws, ws / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path / "v0")
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), (corr.get("error"), list(df["error"]))
    (ws / "kernels" / "v1.py").write_text(sub.replace("grad_output.unsqueeze(1)", "grad_output.unsqueeze(1) * 2"))
    corr = _gate(ws, ws / "kernels" / "v1.py", run_params, tmp_path)
    assert corr["status"] == "incorrect" and "output 'out1'" in corr["error"], corr["error"]
    (src / "submission.py").write_text(sub.split("def cross_entropy_backward")[0])
    assert main(["init", str(tmp_path / "ws2"), "--gpumode", str(src)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "defines no function for phase(s) ['backward']" in err, err


OBJECTS = '''import dataclasses

import torch
from torch import nn


@dataclasses.dataclass
class Config:
    dim: int
    w: torch.Tensor


class Counter(nn.Module):
    """A module with state a call changes (as mla-decode's KVCache its length)."""

    def __init__(self, n):
        super().__init__()
        self.register_buffer("bias", torch.randn(n, device="cuda"))
        self.calls = 0

    def forward(self):
        self.calls += 1
        return self.bias * self.calls


def generate_input(n: int, seed: int):
    torch.manual_seed(seed)
    cfg = Config(dim=n, w=torch.randn(n, n, device="cuda"))
    return cfg, torch.randn(n, n, device="cuda"), Counter(n).to("cuda")


def ref_kernel(data):
    cfg, x, counter = data
    return x @ cfg.w + counter()


from utils import make_match_reference  # noqa: E402

check_implementation = make_match_reference(ref_kernel, rtol=1e-4, atol=1e-4)
'''


def test_tensors_inside_dataclasses_and_modules_are_inputs_and_each_call_gets_the_state_drawn(
    tmp_path, run_params, capsys
):
    """mla-decode's shape (issue 43): a dataclass of weights and a torch module with a buffer and
    state a call changes. Each tensor is an input of its own, named by where it sat; every call
    (the kernel's, in its own process, and the reference's) gets the objects as drawn, so a counter
    the call advances reads 1 each time; one that writes a weight is caught."""
    sub = "def custom_kernel(data):\n    cfg, x, counter = data\n    return x @ cfg.w + counter()\n"
    src = _problem(tmp_path, OBJECTS, sub)
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--gpumode", str(src)]) == 0, capsys.readouterr().err
    with torch.device("cpu"):
        got = Problem(ws / "problem").setup(5, n=8)
    assert {"data0_w", "data2_bias"} <= set(got["inputs"]), list(got["inputs"])
    corr, df, _ = run_version(ws, ws / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path / "v0")
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), (corr.get("error"), list(df["error"]))
    (ws / "kernels" / "v1.py").write_text(sub.replace("    cfg, x", "    data[0].w.mul_(2)\n    cfg, x"))
    corr = _gate(ws, ws / "kernels" / "v1.py", run_params, tmp_path)
    assert corr["status"] != "pass" and "data0_w" in corr["error"], corr["error"]


def test_a_buffer_ref_kernel_reads_and_returns_is_drawn_for_every_call_and_compared_after(tmp_path, run_params, capsys):
    """mla-decode's KV cache (issue 43): ref_kernel appends to a buffer of its data and returns it.
    It is an update: every call gets it as drawn (never poisoned) and it is compared after the call;
    a submission that ignores what it held fails on it."""
    ref = "def ref_kernel(data):\n    a, acc = data\n    acc += a\n    return acc\n"
    check = "\n\nfrom utils import make_match_reference  # noqa: E402\n\ncheck_implementation = make_match_reference(ref_kernel)\n"
    src = _problem(tmp_path, INPUT.format(returns="a, b") + ref + check, ref.replace("ref_kernel", "custom_kernel"))
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--gpumode", str(src)]) == 0, capsys.readouterr().err
    with torch.device("cpu"):
        got = Problem(ws / "problem").setup(5, n=8)
    assert got["outputs"] == ["data1"] and got["updates"] == ["data1"], got
    corr, df, _ = run_version(ws, ws / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path / "v0")
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), (corr.get("error"), list(df["error"]))
    (ws / "kernels" / "v1.py").write_text(
        ref.replace("ref_kernel", "custom_kernel").replace("acc += a", "acc.copy_(a)")
    )
    corr = _gate(ws, ws / "kernels" / "v1.py", run_params, tmp_path)
    assert corr["status"] == "incorrect" and "output 'data1'" in corr["error"], corr["error"]


CANCELS = INPUT.format(returns="a, b") + (
    "def ref_kernel(data):\n    a, b = data\n    return (a * 100 + 0.1) - a * 100\n\n\n"
    "from utils import make_match_reference, verbose_allclose  # noqa: E402\n\n"
    "check_implementation = make_match_reference(ref_kernel, rtol=1e-5, atol=1e-5)\n"
)


def test_a_tolerance_float32_cannot_meet_at_the_benchmarks_sizes_is_widened_and_said(tmp_path, capsys, monkeypatch):
    """On an H200 pmpp's conv2d and amd/moe failed their own v0 against float64 at the benchmarks'
    sizes (1 of 3.3M and 12085 of 14.7M elements): init checks ref_kernel's own outputs there on
    the GPU (emulated here on the CPU, in this process and through the real child), scales the
    tolerance by the least factor met twice over and says it; with no GPU it says they were not
    checked."""
    from kopt.formats import gpumode_precision as gp
    from kopt.formats import precision

    src = _problem(tmp_path, CANCELS, STUB)
    assert main(["init", str(tmp_path / "cpu"), "--gpumode", str(src)]) == 0
    assert "not checked against float64 (no GPU here" in capsys.readouterr().out
    tols = {"default": {"atol": 1e-5, "rtol": 1e-5}}
    args = {"folder": str(tmp_path / "cpu" / "problem"), "configs": [{"n": 16}], "seeds": gp.SEEDS, "device": "cpu"}
    worst, why = gp.worst_by_dtype(**args, tols=tols)
    assert why == "" and 1e-6 < worst["float32"]["gap"] < 1e-4 and worst["float32"]["over"] > 0.5, worst
    child = precision.in_child("kopt.formats.gpumode_precision", {**args, "tols": tols})
    assert child == {"worst": worst, "why": ""}, child  # the real child: the same figures
    asked = []
    monkeypatch.setattr(precision, "gpu_here", lambda: "cuda")
    monkeypatch.setattr(precision, "in_child", lambda module, a: asked.append(a) or child)
    assert main(["init", str(tmp_path / "gpu"), "--gpumode", str(src)]) == 0
    said = capsys.readouterr().out
    assert [a["configs"] for a in asked] == [[{"n": 16}]], asked  # task.yml's benchmarks, not its tests
    tol = yaml.safe_load((tmp_path / "gpu" / "target.yaml").read_text())["tolerances"]
    f = next(f for f in gp.FACTORS if worst["float32"]["over"] / f <= 0.5)
    assert tol["float32"] == tol["default"] == {"atol": 1e-5 * f, "rtol": 1e-5 * f}, tol
    assert "float32 atol" in said and "not 1e-05, 1e-05" in said and "3 draws of each benchmark" in said, said


@pytest.mark.parametrize(
    "own, over, gap, want",
    [
        ({"atol": 5e-6, "rtol": 5e-4}, 0.4, 1e-3, None),  # met twice over: the problem's own (vectoradd, float16)
        ({"atol": 1e-8, "rtol": 1e-5}, 3.0, 1e-5, {"atol": 1e-7, "rtol": 1e-4}),  # both scaled by 10, their ratio kept
        ({"atol": 0.0, "rtol": 0.0}, math.inf, 1e-7, {"atol": 2e-4, "rtol": 2e-4}),  # exact: KernelBench's ladder
        ({"atol": 1e-3, "rtol": 1e-3}, 300.0, 0.3, None),  # nothing up to 5e-2 holds it: kept, said
    ],
)
def test_a_widened_tolerance_scales_the_problems_own(own, over, gap, want):
    from kopt.formats import gpumode_precision as gp

    got, said = gp.widened({"default": own}, {"float16": {"over": over, "gap": gap}}, "x")
    assert got.get("float16") == (want or None) and got["default"] == own, (got, said)
    if want is None and over > 0.5:
        assert "kept" in said, said


def test_a_benchmark_float64_cannot_run_is_named_and_the_others_still_count(tmp_path):
    from kopt.formats import gpumode_precision as gp

    src = _problem(
        tmp_path, CANCELS.replace("    a, b = data\n", "    a, b = data\n    assert a.shape[0] != 24\n"), STUB
    )
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--gpumode", str(src)]) == 0
    tols = {"default": {"atol": 1e-5, "rtol": 1e-5}}
    worst, why = gp.worst_by_dtype(str(ws / "problem"), [{"n": 16}, {"n": 24}], gp.SEEDS, "cpu", tols)
    assert "float32" in worst and "{'n': 24} (AssertionError" in why, (worst, why)
