"""The package's import graph runs one way, down the data flow, and only measure/ (and the kernel's
side, inside/, and formats/, whose KernelBench problems are torch code run as references) imports torch."""

import ast
from pathlib import Path

KOPT = Path(__file__).resolve().parents[1] / "kopt"
# each package may import only the ones before it (and itself)
LAYERS = ["formats", "workspace", "profilers", "analysis", "loop", "measure", "inside", "report", "steps", "cli"]
TORCH = {"torch", "triton"}


def imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out += [node.module] if node.module != "kopt" else [f"kopt.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


def package_of(path: Path) -> str:
    return path.relative_to(KOPT).parts[0].removesuffix(".py")


def test_every_module_is_in_a_layer():
    found = {package_of(p) for p in KOPT.rglob("*.py")} - {"__init__"}
    assert found == set(LAYERS)


def test_imports_only_go_down():
    wrong = []
    for p in KOPT.rglob("*.py"):
        pkg = package_of(p)
        if pkg == "__init__":
            continue
        for mod in imports(p):
            parts = mod.split(".")
            if (
                parts[0] == "kopt"
                and len(parts) > 1
                and parts[1] in LAYERS
                and LAYERS.index(parts[1]) > LAYERS.index(pkg)
                and (str(p.relative_to(KOPT)), mod) not in TRUSTED_USES_OF_INSIDE
            ):
                wrong.append(f"{p.relative_to(KOPT)} imports {mod}")
    assert not wrong, wrong


# the hardware's ceilings are timed by the kernels' own timer; no kernel runs in that process
TRUSTED_USES_OF_INSIDE = {("measure/ceilings.py", "kopt.inside.calls")}
# what the kernel's process imports of the trusted side: the channel, faults, device helpers, the
# arena's slots and views, ref.py's loader (torch baselines) and the returned-tensors reader
INSIDE_MAY_IMPORT = {
    "kopt.measure.wire",
    "kopt.measure.arena",
    "kopt.measure.faults",
    "kopt.measure.device",
    "kopt.measure.variants",
    "kopt.measure.reference",
    "kopt.measure.reaper",  # die_with_parent: the standard library only
    "kopt.profilers",
    "kopt.profilers.torchtrace",
    "kopt.workspace.cuda_source",
    "kopt.workspace.target",
    "kopt.formats",  # set_tf32: torch's TF32 switches, set before the kernel is imported
    "kopt.formats.kernelbench",  # a KernelBench solution's ModelNew, run as its harness runs it
    "kopt.formats.gpumode",  # a gpu-mode submission's custom_kernel, on the problem's packed data
}


def test_the_judge_never_imports_the_kernels_side():
    """The trust boundary: no trusted module imports kopt.inside (but the ceilings' timer, above)."""
    wrong = [
        f"{p.relative_to(KOPT)} imports {m}"
        for p in KOPT.rglob("*.py")
        if package_of(p) != "inside"
        for m in imports(p)
        if m.startswith("kopt.inside") and (str(p.relative_to(KOPT)), m) not in TRUSTED_USES_OF_INSIDE
    ]
    assert not wrong, wrong


def test_the_kernels_side_imports_little_of_the_judge():
    wrong = [
        f"{p.relative_to(KOPT)} imports {m}"
        for p in (KOPT / "inside").rglob("*.py")
        for m in imports(p)
        if m.startswith("kopt.") and not m.startswith("kopt.inside") and m not in INSIDE_MAY_IMPORT
    ]
    assert not wrong, wrong


def test_only_measure_imports_torch():
    wrong = [
        f"{p.relative_to(KOPT)} imports {m}"
        for p in KOPT.rglob("*.py")
        if package_of(p) not in ("measure", "inside", "formats")
        for m in imports(p)
        if m.split(".")[0] in TORCH
    ]
    assert not wrong, wrong


def test_the_layer_test_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from kopt.steps.bench import bench\nimport torch\n")
    assert "kopt.steps.bench" in imports(bad) and "torch" in imports(bad)
