"""A torch.compile'd function that launches a Triton kernel, on the CPU (issue 43: gpu-mode's
vectorsum submission). Dynamo traced the interpreter's own numpy code and failed ("Dynamo failed
to run FX node with fake tensors ... KeyError(torch.uint64)"); the launch now runs outside the
compiled graph, as the interpreter runs an uncompiled one, and the record says so in one line."""

import pytest
import yaml

from kopt.steps.bench import check_then_time
from tests.helpers import FIXTURES


@pytest.mark.parametrize("fixture", ["compiled_launch.py", "optimized_launch.py"])  # torch.compile, Dynamo's own
def test_a_compiled_triton_launch_passes_its_gate_on_the_interpreter(tiny, tmp_path, run_params, fixture):
    doc = yaml.safe_load((tiny / "target.yaml").read_text())
    doc["cpu_configs"] = doc["cpu_configs"][:1]  # one config: Dynamo compiles once
    (tiny / "target.yaml").write_text(yaml.safe_dump(doc))
    kernel = FIXTURES / "bad_kernels" / fixture
    out = tmp_path / "out"
    params = {**run_params, "device": "cpu", "timeout_s": 120}
    corr, _ = check_then_time(
        out, version="v0", target=str(tiny / "target.yaml"), kernel=str(kernel), log=str(out / "steps.log"),
        params=params, time=False,
    )  # fmt: skip
    assert corr["status"] == "pass", corr["error"]
    notes = corr["provenance"]["notes"]
    assert len(notes) == 1 and "torch.compile on the Triton CPU interpreter" in notes[0], notes
    assert "softmax_one_pass run eagerly between the compiled graphs" in notes[0]  # the shared honest kernel
    assert f"- the kernel's process reported: `{notes[0]}`" in (out / "correctness.md").read_text()


def test_a_fullgraph_compile_on_the_interpreter_is_one_clear_line():
    """fullgraph=True forbids the graph break the interpreter needs: one line says what to do."""
    from kopt.inside import interpreter

    interpreter.install("kernels/v3.py")
    said = interpreter.explain(RuntimeError(f"Skip calling ... (reason: {interpreter.OUTSIDE_THE_GRAPH})"), None)
    assert said.startswith("kernels/v3.py: torch.compile(fullgraph=True) cannot hold a Triton launch")
