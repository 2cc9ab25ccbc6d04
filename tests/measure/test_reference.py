"""The reference protocol: every return form, a returning reference with kernels that write in place,
a reference too big for the device, and the input contract (setup's seed by keyword, output buffers
that setup allocates with torch.empty). On the CPU."""

import os
import shutil
import types

import pytest
import torch
import yaml

from kopt.measure import reference, variants
from kopt.measure.faults import KernelFault
from kopt.measure.reference import outputs_of, setup_takes_seed
from kopt.steps.correctness import check_reference
from kopt.workspace.target import WorkspaceError
from tests.helpers import FIXTURES as FIX
from tests.helpers import ROOT, _copy, run_version, template


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


# --- the input contract: how setup() is called, and outputs that setup() allocates -----------------


def _module(source: str):
    """A ref.py from its source text, as an imported module."""
    mod = types.ModuleType("kopt_test_reference")
    exec(compile(source, "ref.py", "exec"), mod.__dict__)
    return mod


TEMPLATE_ON_CPU = template("ref.py").read_text().replace(', device="cuda"', "")


@pytest.fixture
def garbage_empty(monkeypatch):
    """torch.empty whose floating memory is really garbage, different on every call (on the CPU a
    small block often comes back zeroed); returns the list of tensors it dirtied."""
    dirtied, real = [], torch.empty

    def dirty(*a, **k):
        t = real(*a, **k)
        if t.is_floating_point() and t.numel():
            t.reshape(-1).view(torch.uint8).random_()
            dirtied.append(t.shape)
        return t

    monkeypatch.setattr(torch, "empty", dirty)
    return dirtied


@pytest.mark.parametrize(
    "signature, config",
    [
        ("def setup(seed, M, N):", {"M": 3, "N": 5}),
        ("def setup(M, N, seed=0):", {"M": 3, "N": 5}),
        ("def setup(n=1024, seed=42, **kwargs):", {"n": 7}),
        ("def setup(*, seed, n):", {"n": 7}),
    ],
)
def test_setup_gets_its_seed_by_keyword(signature, config):
    ref = _module(
        f"import torch\n{signature}\n    torch.manual_seed(seed)\n"
        "    return {'inputs': {'x': torch.randn(3, 7)}, 'outputs': ['y']}\n"
        "def reference(x):\n    return x * 2\n"
    )
    assert setup_takes_seed(ref.setup) is None
    a, b, c = (reference.draw(ref, config, s, "cpu") for s in (11, 11, 12))
    assert torch.equal(a.inputs["x"], b.inputs["x"]) and not torch.equal(a.inputs["x"], c.inputs["x"])
    reference.check_seed_used(ref, config, "cpu", 11)


def test_a_setup_without_a_seed_parameter_is_one_clear_line(tmp_path):
    path = tmp_path / "ref.py"
    path.write_text("def setup(M, N):\n    return {}\ndef reference(x):\n    return x\n")
    with pytest.raises(KernelFault) as e:
        variants.load_reference(path)
    msg = str(e.value)
    assert msg.startswith(f"{path}: setup() takes no 'seed' parameter by keyword") and "\n" not in msg
    assert "def setup(M, N, seed=0)" in msg
    assert setup_takes_seed(_module("def setup(seed, /, M):\n    pass").setup)  # positional only
    assert setup_takes_seed(_module("def setup(**kw):\n    pass").setup) is None  # kw['seed']


def test_output_buffers_from_torch_empty_are_not_compared(garbage_empty):
    """The template's in-place ref.py: two draws of one seed give equal inputs and garbage outputs;
    at 40964bc this was 'setup() is not deterministic: input 'out' differs'."""
    ref = _module(TEMPLATE_ON_CPU)
    layout, d = reference.probe(ref, {"n": 1000}, "cpu", 5)
    assert garbage_empty  # the outputs were really garbage
    assert layout.returns is False and layout.names == ["out"] and layout.inputs == ["x", "y"]
    assert layout.spec("out").in_inputs and layout.spec("out").dtype == "float32"
    plan = reference.place(ref, d, layout, "cpu")
    exp = reference.expected(ref, d.inputs, layout, plan)
    assert exp["out"].dtype == torch.float64 and torch.equal(
        exp["out"], d.inputs["x"].double() + d.inputs["y"].double()
    )


def test_an_output_buffer_whose_shape_or_dtype_changes_is_still_refused():
    ref = _module(
        TEMPLATE_ON_CPU.replace(
            "out = torch.empty((n,)", "CALLS.append(1)\n    out = torch.empty((n + len(CALLS) % 2,)"
        )
        + "\nCALLS = []\n"
    )
    with pytest.raises(KernelFault, match="setup\\(\\) is not deterministic: output buffer 'out' has another shape"):
        reference.probe(ref, {"n": 100}, "cpu", 5)


@pytest.mark.parametrize(
    "body",
    [
        "out.add_(x + y)",  # accumulates
        "out[: n // 2].copy_((x + y)[: n // 2])",  # writes half
        "torch.fmax(out, x + y, out=out)",  # reads, and the NaN poison does not carry through
        "out.copy_(torch.where(out > 0, out, x + y))",
        "out.add_(x + y)\n    return out",  # reads, and returns the buffer
    ],
)
def test_a_reference_that_reads_or_leaves_its_output_is_refused(body):
    """Outputs are write-only: kernels find them poisoned, so a reference that reads its output,
    or writes only part of it, would make the expected outputs whatever the buffer held."""
    ref = _module(TEMPLATE_ON_CPU.replace("out.copy_(x + y)", f"n = kwargs['n']\n    {body}"))
    assert reference.probe(ref, {"n": 100}, "cpu", 5)  # only rule reference checks (once per config)
    with pytest.raises(KernelFault, match="reference\\(\\) reads its output 'out' before writing it, or leaves part"):
        reference.probe(ref, {"n": 100}, "cpu", 5, check_writes=True)


@pytest.mark.parametrize("dtype", ["float32", "float16", "complex64", "int64", "bool"])
def test_a_reference_that_only_writes_its_output_passes_the_write_check(dtype):
    """Every dtype's poison and second fill; a result with NaN of its own, and one that returns
    a fresh tensor while setup also lists a buffer, are not mistaken for reads."""
    ref = _module(
        "import torch\n"
        "def setup(seed, n, dtype):\n    torch.manual_seed(seed)\n    x = torch.randn(n)\n"
        "    return {'inputs': {'x': x, 'out': torch.empty(n, dtype=getattr(torch, dtype))}, 'outputs': ['out']}\n"
        "def reference(x, out):\n    out.copy_(torch.where(x > 1, float('nan'), x) if out.is_floating_point() else x > 0)\n"
    )
    layout, _ = reference.probe(ref, {"n": 64, "dtype": dtype}, "cpu", 5, check_writes=True)
    assert layout.spec("out").dtype == dtype and not layout.returns
    fresh = _module(TEMPLATE_ON_CPU.replace("out.copy_(x + y)", "return x + y"))
    assert reference.probe(fresh, {"n": 100}, "cpu", 5, check_writes=True)[0].returns


def test_a_setup_that_ignores_its_seed_is_refused():
    ref = _module(TEMPLATE_ON_CPU.replace("torch.manual_seed(seed)", "torch.manual_seed(42)"))
    reference.probe(ref, {"n": 100}, "cpu", 5)  # deterministic, so the probe alone cannot tell
    with pytest.raises(KernelFault, match="setup\\(\\) ignores its seed: seed 5 and 7 others give the same inputs"):
        reference.check_seed_used(ref, {"n": 100}, "cpu", 5)
    scalars_only = _module(
        "import torch\ndef setup(seed, n):\n    return {'inputs': {'n': n, 'out': torch.empty(n)}, 'outputs': ['out']}\n"
        "def reference(n, out):\n    out.copy_(torch.arange(n))\n"
    )
    reference.check_seed_used(scalars_only, {"n": 4}, "cpu", 5)  # no input tensors: nothing to vary


@pytest.mark.parametrize(
    "old, new, says",
    [
        ("def setup(seed, M, N,", "def setup(M, N,", "setup() takes no 'seed' parameter by keyword"),
        ("torch.manual_seed(seed)", "torch.manual_seed(0)", "setup() ignores its seed: seed "),
    ],
)
def test_rule_reference_refuses_a_setup_that_cannot_be_seeded(tiny, tmp_path, run_params, old, new, says):
    ref = tiny / "ref.py"
    assert old in ref.read_text()
    ref.write_text(ref.read_text().replace(old, new))
    with pytest.raises(WorkspaceError) as e:
        check_reference(target=str(tiny / "target.yaml"), out_json=str(tmp_path / "r.json"), log=str(tmp_path / "l"),
                        params=run_params)  # fmt: skip
    msg = str(e.value)
    assert msg.startswith(f"{ref}: ") and says in msg and msg.endswith("no version was run") and "\n" not in msg


DIRTY_EMPTY = """import os
import sys

import torch

_real = torch.empty


def _dirty(*args, **kwargs):
    t = _real(*args, **kwargs)
    if t.is_floating_point() and t.numel():
        t.reshape(-1).view(torch.uint8).random_()
        with open(os.environ["KOPT_TEST_DIRTY_LOG"], "a") as f:
            f.write(f"{os.path.basename(sys._getframe(1).f_code.co_filename)}:{tuple(t.shape)}\\n")
    return t


torch.empty = _dirty
"""


def test_the_skill_template_runs_as_it_is(tmp_path, run_params, monkeypatch):
    """The published template's ref.py and Triton kernel.py, verbatim but for their hard-coded
    device="cuda", through the gate and the timing in a child whose torch.empty returns garbage
    (a sitecustomize on its path): the template's in-place output passes; a kernel that writes half
    of it is still caught."""
    ws = tmp_path / "ws"
    (ws / "kernels").mkdir(parents=True)
    (ws / "ref.py").write_text(TEMPLATE_ON_CPU)
    kernel = template("kernel.py").read_text().replace(', device="cuda"', "")
    (ws / "kernels" / "v0.py").write_text(kernel)
    half = kernel.replace("_kernel[grid](x, y, out, n, BLOCK=256)", "_kernel[grid](x, y, out, n // 2, BLOCK=256)")
    assert half != kernel
    (ws / "kernels" / "half.py").write_text(half)
    target = yaml.safe_load((ROOT / "examples" / "vector_add" / "target.yaml").read_text())
    (ws / "target.yaml").write_text(yaml.safe_dump({**target, "configs": target["cpu_configs"]}))  # GPU too
    site, log = tmp_path / "site", tmp_path / "dirtied.txt"
    site.mkdir()
    (site / "sitecustomize.py").write_text(DIRTY_EMPTY)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("KOPT_TEST_DIRTY_LOG", str(log))
    corr, df, _ = run_version(ws, ws / "kernels" / "v0.py", run_params, tmp_path / "v0")
    assert corr["status"] == "pass", corr["error"]
    assert (df["status"] == "ok").all(), df["error"].tolist()
    assert corr["configs"][0]["reference_returns"] is False
    assert "ref.py:(1000,)" in log.read_text().split()  # setup's out really was garbage, in the child
    wrong, df, _ = run_version(ws, ws / "kernels" / "half.py", run_params, tmp_path / "half")
    assert wrong["status"] == "incorrect" and "500 of 1000 elements are NaN" in wrong["error"]


def test_a_float64_reference_that_runs_out_of_gpu_memory_during_timing_moves_to_float32(monkeypatch):
    """H100 (80 GB), KernelBench's RMSNorm at its own size: float64 on the GPU fitted the gate, then
    ran out of memory beside the timing's input pool and the kernel's process, failing both
    versions. Now the check goes on in float32 on the GPU, its tolerance widened and why recorded;
    any other failure of the reference still fails, and a float32 one that runs out too."""
    from kopt.measure.trial import Trial

    calls = []

    def expected(ref, inputs, layout, plan):
        calls.append(plan.precision)
        if plan.precision == reference.FLOAT64:
            raise KernelFault("ref.py: reference() failed") from torch.OutOfMemoryError("CUDA out of memory")
        return {"y": torch.ones(2)}

    monkeypatch.setattr(reference, "expected", expected)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    layout = types.SimpleNamespace(outputs=[types.SimpleNamespace(name="y", dtype="float32")], tolerance=None)
    monkeypatch.setattr("kopt.measure.trial.tolerance_for", lambda o, t, c, widened: {"widened": widened})
    trial = object.__new__(Trial)
    trial.ref, trial.layout, trial.item = None, layout, {"tol": {}}
    trial.placement = reference.Placement("cuda", reference.FLOAT64, peak_bytes=1, why="fits")
    trial.tol = trial._tolerances()
    draw = types.SimpleNamespace(inputs={})
    assert trial._expected(draw)["y"].sum() == 2 and calls == ["float64", "float32"]
    assert trial.placement.precision == "float32" and trial.tol == {"y": {"widened": True}}
    assert trial.placement.why == "float64 on cuda ran out of memory beside the input pool, so float32"
    with pytest.raises(KernelFault):  # already float32: nowhere left to go
        monkeypatch.setattr(reference, "expected", lambda *a: (_ for _ in ()).throw(KernelFault("oom")))
        trial._expected(draw)
    trial.placement = reference.Placement("cuda", reference.FLOAT64)
    monkeypatch.setattr(reference, "expected", lambda *a: (_ for _ in ()).throw(KernelFault("ref.py: bad")))
    with pytest.raises(KernelFault, match="bad"):
        trial._expected(draw)
    assert trial.placement.precision == "float64"


@pytest.mark.parametrize(
    "tol, ok",
    [({"atol": 1e-3, "rtol": 2e-3}, True), ({"atol": -1.0, "rtol": 0.0}, False), ({"rtol": 1e-3}, False), (0.1, False)],
)
def test_setup_may_give_its_own_tolerance_for_the_configs_data(tol, ok):
    """A gpu-mode check's tolerance computed at run time reaches the judge with the draw; anything
    but two numbers >= 0 is one line naming ref.py."""
    ref = types.SimpleNamespace(setup=lambda seed, n: {"inputs": {"x": torch.ones(n)}, "outputs": [], "tolerance": tol})
    if ok:
        assert reference.draw(ref, {"n": 4}, 1, "cpu").tolerance == tol
    else:
        with pytest.raises(KernelFault, match=r"ref.py: setup\(\)'s 'tolerance' must be"):
            reference.draw(ref, {"n": 4}, 1, "cpu")
