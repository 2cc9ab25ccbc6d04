import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import FIXTURES, ROOT, SOFTMAX_STAGES, copy_project, copy_tree, once_per_run, snakemake

BUILD_DEFAULTS = {"nvcc": "auto", "hipcc": "hipcc", "arch": "auto", "flags": ["-O3", "-lineinfo"]}

sys.path.insert(0, str(ROOT))

# GPU-only tests live in tests/gpu and are collected only where torch sees a GPU; on the CPU
# (CI) they are not collected at all rather than reported as skipped. Their output from the
# H100 is committed under docs/runs/.
collect_ignore = []
try:
    import torch

    if not torch.cuda.is_available():
        collect_ignore.append("gpu")
except ImportError:
    collect_ignore.append("gpu")
# The graph through the SLURM profile needs a SLURM cluster: CI starts a single-node one
# (tools/slurm_local.sh) and sets KOPT_SLURM=1; elsewhere the test is not collected.
SLURM = os.environ.get("KOPT_SLURM") == "1"
if not SLURM:
    collect_ignore.append("graph/test_slurm.py")
SLURM_TARGETS = ("results/v1/compare.json", "results/v1/bottleneck.json")  # the decision, then what follows it


@pytest.fixture
def tiny(tmp_path) -> Path:
    """A writable copy of the tiny softmax workspace: the example's ref.py and its v1 as v0."""
    dst = tmp_path / "tiny"
    shutil.copytree(FIXTURES / "tiny", dst)
    shutil.copy(ROOT / "examples" / "softmax" / "ref.py", dst / "ref.py")
    shutil.copy(ROOT / "examples" / "softmax" / "kernels" / "v1.py", dst / "kernels" / "v0.py")
    return dst


@pytest.fixture
def run_params():
    return {
        "device": "auto",
        "timeout_s": 20,
        "bench": {
            "warmup_ms": 10,
            "rep_ms": 20,
            "min_samples": 10,
            "max_samples": 50,
            "flush_l2": True,
            "cpu_warmup": 1,
            "cpu_samples": 2,
        },
    }


@pytest.fixture(scope="session")
def v7_build(tmp_path_factory) -> dict:
    """The softmax example's CUDA version compiled once (build.json's record) by the build step."""
    from kopt.steps.build import build

    out = tmp_path_factory.mktemp("v7_build")
    kernel = str(ROOT / "examples" / "softmax" / "kernels" / "v7.cu")
    settings = {"timeout_s": 300, "gpu": "auto", "build": BUILD_DEFAULTS}
    return {**build(version="v7", kernel=kernel, out_dir=str(out), settings=settings), "dir": out}


@pytest.fixture(scope="session")
def shared_root(tmp_path_factory) -> Path:
    """A folder every xdist worker of this test run sees, beside each worker's own popen-gwK/ and
    named by the run's id (a --basetemp given again never hands a run the last run's builds);
    without xdist, this process's base folder."""
    base = tmp_path_factory.getbasetemp()
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return base
    root = base.parent / f"shared-{os.environ['PYTEST_XDIST_TESTRUNUID']}"
    root.mkdir(exist_ok=True)
    return root


@pytest.fixture(scope="session")
def softmax_graph(shared_root):
    """``softmax_graph(stage)``: a copy of the project with the softmax example's graph built to
    SOFTMAX_STAGES[stage] (v0, v1 or all), once per test run, whichever xdist worker asks first.

    Shared because the same end-to-end builds were made again and again on the CPU interpreter (a
    minute for v0 and v1, three for every version): by test_e2e, test_rerun, test_results_tree,
    test_agent_loop and test_slurm. Each stage continues a copy of the one before it. The folder is
    read by every test file: a test that changes anything works on its own copy (copy_tree), which
    keeps the modification times Snakemake decides reruns by."""

    def built(stage: str) -> Path:
        before, targets = SOFTMAX_STAGES[stage]

        def build(dst: Path) -> None:
            if before:
                copy_tree(built(before), dst)
            else:
                copy_project(dst)
            p = snakemake(dst, *targets)
            assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]

        return once_per_run(shared_root, f"softmax-{stage}", build)

    return built


@pytest.fixture(scope="session", autouse=SLURM)
def slurm_graph(shared_root) -> Path:
    """The project whose graph goes through profiles/slurm (tests/graph/test_slurm.py), started in
    the background as the test run starts, by whichever xdist worker comes first; its command's
    output goes to slurm.log, its exit status to slurm.rc when it ends. Its jobs mostly wait on
    SLURM (a sbatch call, then squeue's polls: 205 s in CI, little of it CPU), which held one of the
    two workers nearly idle while the test ran it; the test waits for it instead."""
    from filelock import FileLock  # the test extra's (pyproject.toml), and torch's

    folder = shared_root / "slurm"
    with FileLock(str(shared_root / "slurm.lock")):
        if not folder.exists():
            folder.mkdir()
            copy_project(folder)  # profiles/ with it (slurm and the workflow's default)
            # squeue polled a second after each submission, not the profile's 5 s
            cmd = [sys.executable, "-m", "snakemake", "--profile", "profiles/slurm"]
            cmd += ["--slurm-init-seconds-before-status-checks", "1", *SLURM_TARGETS, "--config", "device=cpu"]
            script = '"$@" > slurm.log 2>&1; echo $? > slurm.rc.part && mv slurm.rc.part slurm.rc'
            # not this worker's child: reaper.sweep() in this process (KernelProcess.end, tests/measure's
            # test_watch and test_boundary) SIGKILLs every child it has; `setsid -f` forks and returns at
            # once, so the run goes to init (no test has made this worker a subreaper yet: this comes first)
            subprocess.run(
                ["setsid", "-f", "sh", "-c", script, "sh", *cmd], cwd=folder, stdin=subprocess.DEVNULL, check=True
            )
    return folder
