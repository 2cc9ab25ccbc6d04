"""torch's TF32 switches in the kernel's process (issue 43, point 2): off unless target.yaml's
``tf32`` allows it, so float32 means float32 on both sides of a gate (torch's convolutions use TF32
by default: a KernelBench convolution's own torch eager failed its float64 gate on an H200); the
switches as the kernel's process read them after importing the version are recorded beside the
verdict (its word: the gate's tolerance is what catches a version that turns them on, on a GPU:
tests/gpu/test_gpu_formats.py); with ``tf32`` allowed, float32 outputs are held to a 10-bit
mantissa's tolerance."""

import yaml

from tests.helpers import run_version

TURNS_IT_ON = """import torch

torch.backends.cudnn.allow_tf32 = True  # a version that drops to TF32 on import


def run_kernel(x, y):
    y.copy_(torch.softmax(x, dim=-1))
"""


def test_tf32_is_off_in_the_kernels_process_and_what_a_version_sets_is_recorded(tiny, tmp_path, run_params):
    corr, _, _ = run_version(tiny, tiny / "kernels" / "v0.py", run_params, tmp_path / "a")
    off = {"matmul": False, "cudnn": False, "float32_matmul_precision": "highest"}
    assert corr["provenance"]["precision"] == {"tf32_allowed": False, "reported": off}
    (tiny / "kernels" / "v1.py").write_text(TURNS_IT_ON)
    corr, _, _ = run_version(tiny, tiny / "kernels" / "v1.py", run_params, tmp_path / "b")
    assert corr["provenance"]["precision"]["reported"]["cudnn"] is True and corr["status"] == "pass"


def test_a_target_that_allows_tf32_holds_float32_to_its_tolerance(tiny, tmp_path, run_params):
    doc = yaml.safe_load((tiny / "target.yaml").read_text())
    (tiny / "target.yaml").write_text(yaml.safe_dump({**doc, "tf32": True}))
    corr, _, _ = run_version(tiny, tiny / "kernels" / "v0.py", run_params, tmp_path / "a")
    assert corr["provenance"]["precision"]["tf32_allowed"] is True
    assert corr["provenance"]["precision"]["reported"]["matmul"] is True
    assert all(c["atol"] >= 1e-2 and c["rtol"] >= 1e-2 for c in corr["configs"]), corr["configs"]
