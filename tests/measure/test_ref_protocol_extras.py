"""ref.py's optional parts added for gpu-mode's problems (issue 43), on the judge's functions
directly: ``updates`` (a buffer the reference reads, then writes), ``check_outputs`` (outputs
judged by their properties), the reference at the inputs' own dtypes where float64 cannot run."""

import contextlib
from types import SimpleNamespace

import pytest
import torch

from kopt.measure import reference
from kopt.measure.faults import KernelFault


def _setup(seed, n=8):
    torch.manual_seed(seed)
    x = torch.randn(n)
    return {
        "inputs": {"x": x, "acc": torch.randn(n), "out": torch.empty(n)},
        "outputs": ["acc", "out"],
        "updates": ["acc"],
    }


def _accumulate(x, acc, out):
    acc += x  # not idempotent: a second run on the same buffer is another result
    out.copy_(acc * 2)


def test_an_update_that_is_not_idempotent_passes_rule_reference_and_the_draw_stays_as_drawn():
    ref = SimpleNamespace(setup=_setup, reference=_accumulate)
    layout, d = reference.probe(ref, {"n": 8}, "cpu", 3, check_writes=True)
    assert layout.updates == ["acc"] and "acc" not in layout.inputs
    drawn = reference.draw(ref, {"n": 8}, 3, "cpu")
    assert torch.equal(d.inputs["acc"], drawn.inputs["acc"])  # the probe's runs left the draw alone
    plan = reference.Placement("cpu", reference.FLOAT64)
    exp = reference.expected(ref, d.inputs, layout, plan)
    assert torch.equal(d.inputs["acc"], drawn.inputs["acc"])  # float64 at float64: still a copy
    assert torch.allclose(exp["acc"], (drawn.inputs["acc"] + drawn.inputs["x"]).double())
    reference.scrub(exp)
    assert torch.equal(d.inputs["acc"], drawn.inputs["acc"])


def _unit_rows(seed, n=4):
    torch.manual_seed(seed)
    return {"inputs": {"a": torch.randn(n, n)}, "outputs": []}


@pytest.mark.parametrize(
    "check, words",
    [
        (lambda i, o: None if not (o["out"].norm(dim=1) > 2).any() else "too long", "passes outputs poisoned with NaN"),
        (lambda i, o: "never", "fails the reference's own outputs: never"),
        (lambda i, o: None if torch.allclose(o["out"].norm(dim=1), torch.ones(len(o["out"]))) else "no", None),
    ],
)
def test_a_check_of_its_own_must_pass_the_references_outputs_and_fail_unwritten_ones(check, words):
    ref = SimpleNamespace(setup=_unit_rows, reference=lambda a: a / a.norm(dim=1, keepdim=True), check_outputs=check)
    layout, d = reference.probe(ref, {"n": 4}, "cpu", 5)
    if words is None:
        assert reference.checking_plan(ref, d, layout, "cpu").precision == reference.NONE
        return
    with pytest.raises(KernelFault, match=words):
        reference.checking_plan(ref, d, layout, "cpu")


def test_a_reference_that_cannot_run_in_float64_runs_at_its_inputs_dtypes_and_says_why():
    def bf16_inside(a):  # as mla-decode's attention: its weights cast to bfloat16, times the values
        return a.float().softmax(-1).to(torch.bfloat16) @ a  # in float64: bfloat16 @ float64 fails

    def bf16_rows(seed, n=4):
        torch.manual_seed(seed)
        return {"inputs": {"a": torch.randn(n, n).to(torch.bfloat16)}, "outputs": []}

    ref = SimpleNamespace(setup=bf16_rows, reference=bf16_inside)
    layout, d = reference.probe(ref, {"n": 4}, "cpu", 5)
    plan = reference.place(ref, d, layout, "cpu")
    assert plan.precision == reference.NATIVE and "float64 on cpu failed (" in plan.why and "same dtype" in plan.why, (
        plan
    )


def test_after_float64_ran_out_of_the_gpus_memory_the_host_is_tried_only_with_room_to_spare(monkeypatch):
    """gpu-mode's mla-decode on an H200: float64 ran out of the GPU's memory, then ran on the host,
    grew to 123 GB of 125 and the OOM killer ended the judge (every run, no verdict). After a GPU
    run out of memory the host needs HOST_AFTER_GPU times the GPU's whole memory (another process
    may hold some of it for now); else float32 on the GPU, else the inputs' own dtypes where those
    take less, each reason recorded. (The GPU emulated: its memory and its running out of it.)"""

    def setup(seed, n=4, dtype="float32"):
        a = torch.randn(n, n, generator=torch.Generator().manual_seed(seed)).to(getattr(torch, dtype))
        return {"inputs": {"a": a}, "outputs": []}

    ref = SimpleNamespace(setup=setup, reference=lambda a: a * 2)
    free = {"cuda": 50 * 2**30, "cpu": 125 * 2**30}  # the GPU shared: 50 of its 141 GiB free
    ran, oom_in = [], set()

    def expected(ref, inputs, layout, plan):
        ran.append((plan.device, plan.precision))
        if (plan.device, plan.precision) in oom_in:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 137.00 GiB")
        return {}

    monkeypatch.setattr(reference, "expected", expected)
    monkeypatch.setattr(reference, "available_bytes", lambda dev: free[dev])
    monkeypatch.setattr(reference, "gpu_total_bytes", lambda: 141 * 2**30)
    monkeypatch.setattr(reference, "_peak", lambda plan: contextlib.nullcontext())
    layout, d = reference.probe(ref, {"n": 4}, "cpu", 5)
    oom_in.add(("cuda", reference.FLOAT64))
    plan = reference.place(ref, d, layout, "cuda")
    assert ran == [("cuda", "float64"), ("cuda", "float32")] and plan.precision == reference.FLOAT32, (ran, plan)
    assert "float64 on cpu needs about 282.0 GiB, 125.0 GiB available" in plan.why, plan.why
    ran.clear()
    free["cpu"] = 300 * 2**30  # room to spare: the host is tried
    assert reference.place(ref, d, layout, "cuda").device == "cpu" and ran[-1] == ("cpu", "float64"), ran
    free["cpu"] = 125 * 2**30
    oom_in.add(("cuda", reference.FLOAT32))
    with pytest.raises(KernelFault, match="does not fit anywhere"):  # float32 inputs: their own dtypes take as much
        reference.place(ref, d, layout, "cuda")
    ran.clear()
    layout, d = reference.probe(ref, {"n": 4, "dtype": "bfloat16"}, "cpu", 5)
    plan = reference.place(ref, d, layout, "cuda")  # bfloat16 inputs: half of float32's memory
    assert ran[-1] == ("cuda", "native") and plan.precision == reference.NATIVE, (ran, plan)
    assert "float32 on cuda ran out of memory" in plan.why, plan.why
