"""The example's graph through profiles/slurm on a real SLURM (CI: a single-node cluster started by
tools/slurm_local.sh, two stand-in GPUs), against a local run of the same target: every rule but
the two bookkeeping localrules runs as a SLURM job, and the results are the same in kind."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import copy_project

pytestmark = pytest.mark.e2e

TARGET = "results/v1/compare.json"
COMPUTED = {"reference", "hardware", "measure", "recorded", "bottleneck", "compare"}
LOCAL = {"owner", "settings"}  # localrules: small files written on the submitting host


def _run(project: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", *args, TARGET, "--config", "device=cpu"]
    return subprocess.run(cmd, cwd=project, capture_output=True, text=True, timeout=900)


def _tree(results: Path) -> set[str]:
    """The result files, without logs and timing records (which differ by executor)."""
    skip = ("logs/", "benchmarks/", "command_runs/")
    return {
        str(p.relative_to(results))
        for p in results.rglob("*")
        if p.is_file() and not str(p.relative_to(results)).startswith(skip) and "/raw/" not in str(p)
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory, softmax_graph):
    slurm = copy_project(tmp_path_factory.mktemp("slurm"))  # profiles/ with it (slurm and the workflow's default)
    # squeue polled a second after each submission, not the profile's 5 s (the plugin then adds
    # 10 s a poll that sees no job end); alone this run took 2m02 (12-17 s a level of the graph),
    # in CI 205 s
    p = _run(slurm, "--profile", "profiles/slurm", "--slurm-init-seconds-before-status-checks", "1")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    local = softmax_graph("v1")  # TARGET run locally: this test run's shared build (tests/conftest.py), read only
    return slurm, p.stdout + p.stderr, local


def test_every_computing_rule_ran_as_a_slurm_job(runs):
    _, log, _ = runs
    submitted = re.findall(r"has been submitted with SLURM jobid (\d+) \(log: \S*/rule_(\w+)/", log)
    print("\n".join(f"SLURM job {j}: rule {r}" for j, r in submitted))
    assert {r for _, r in submitted} == COMPUTED
    assert len({j for j, _ in submitted}) == len(submitted)  # one job id per job
    local = set(re.findall(r"^localrule (\w+):", log, flags=re.M))
    assert local == LOCAL


def test_the_slurm_run_gives_what_a_local_run_gives(runs):
    slurm, _, local = runs
    assert _tree(slurm / "results") == _tree(local / "results")
    for v in ("v0", "v1"):
        a, b = (json.loads((d / "results" / v / "correctness.json").read_text()) for d in (slurm, local))
        assert a["status"] == b["status"] == "pass" and [c["result"] for c in a["configs"]] == [
            c["result"] for c in b["configs"]
        ]
    a, b = (json.loads((d / "results" / "v0" / "compare.json").read_text()) for d in (slurm, local))
    assert a["decision"] == b["decision"] == "baseline"  # v1's verdict rests on CPU timings: not deterministic
