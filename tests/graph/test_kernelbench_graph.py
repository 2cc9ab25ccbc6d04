"""Five of KernelBench's level-1 problems, verbatim (tests/fixtures/kernelbench/: a matmul, an
elementwise op, a softmax, a norm and a reduction), each made a workspace by `kopt init
--kernelbench` and taken through the whole graph to v0's comparison on the CPU: the gate, timing,
profile, bottleneck and reports of torch eager at the CPU config kopt derives. Times are the
interpreter's, not GPU figures."""

import json

import pytest
import yaml

from kopt.cli import main
from tests.helpers import FIXTURES, copy_project, snakemake

KB = FIXTURES / "kernelbench"
FIVE = (
    "1_Square_matrix_multiplication_",
    "19_ReLU",
    "23_Softmax",
    "40_LayerNorm",
    "51_Argmax_over_a_dimension",
)


@pytest.mark.e2e
def test_five_level_1_problems_run_through_the_graph_on_the_cpu(tmp_path):
    dst = copy_project(tmp_path)
    failed = {}
    for name in FIVE:
        ws = dst / "ws" / name
        assert main(["init", str(ws), "--kernelbench", str(KB / f"{name}.py")]) == 0
        runs = dst / "runs" / name
        p = snakemake(dst, "-d", str(runs), "results/v0/compare.json", config=[f"workspace={ws}"])
        if p.returncode != 0:
            failed[name] = (p.stdout[-1500:] + p.stderr[-1500:]).strip()
            continue
        corr = json.loads((runs / "results" / "v0" / "correctness.json").read_text())
        cpu_configs = yaml.safe_load((ws / "target.yaml").read_text())["cpu_configs"]
        assert corr["status"] == "pass" and corr["device"] == "cpu", (name, corr.get("error"))
        assert len(corr["configs"]) == len(cpu_configs), name
        comp = json.loads((runs / "results" / "v0" / "compare.json").read_text())
        assert comp["decision"] == "baseline", (name, comp["decision"], comp.get("reason"))  # the first version
    assert not failed, failed
