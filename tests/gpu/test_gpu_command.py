"""GPU-only: a command target's steps on a real GPU kernel. The repository's benchmark runs the
example's one-pass Triton softmax and writes err_triton and us_triton per config; bench takes
the kernel's GPU time per launch from Nsight Compute (when installed), profile its counters."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from kopt.steps import command
from tests.helpers import ROOT

BENCH = """import torch, triton, kernel
rows = []
for M, N in ((4096, 2048), (1024, 16384)):
    x = torch.randn(M, N, device="cuda")
    y = torch.empty_like(x)
    for _ in range(3):
        kernel.run_kernel(x=x, y=y)
    err = (y - torch.softmax(x, -1)).abs().max().item()
    with torch.cuda.nvtx.range(f"kopt-class N={N}"):  # what a command does to get GPU times per class
        us = triton.testing.do_bench(lambda: kernel.run_kernel(x=x, y=y), warmup=5, rep=20) * 1e3
    rows.append(f"{M},{N},{err if err > 1e-5 else 0},{us}")
open("bench.csv", "w").write("M,N,err_triton,us_triton\\n" + "\\n".join(rows) + "\\n")
"""


@pytest.fixture
def ws(tmp_path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    shutil.copy(ROOT / "examples" / "softmax" / "kernels" / "v1.py", repo / "kernel.py")
    (repo / "bench.py").write_text(BENCH)
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@x", "commit", "-qm", "v1"]):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    target = {"kind": "command", "repository": "repo", "command": "python3 bench.py", "csv": "bench.csv"}
    target.update(time_column="us_triton", class_by=["N"], repeats=2, kernel="softmax")
    (tmp_path / "target.yaml").write_text(yaml.safe_dump(target))
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "v0.yaml").write_text("commit: HEAD\n")
    return tmp_path


def test_a_command_version_is_gated_timed_by_the_kernels_gpu_time_and_profiled(ws, run_params):
    r, target, settings = ws / "results" / "v0", str(ws / "target.yaml"), {**run_params, "ncu": "ncu", "timeout_s": 240}
    b = command.build(
        version="v0",
        target=target,
        meta=str(ws / "kernels" / "v0.yaml"),
        parent_build=None,
        baseline_build=None,
        out_dir=str(r / "build"),
    )
    assert b["status"] == "ok", b["error"]
    common = {
        "version": "v0",
        "target": target,
        "build": str(r / "build"),
        "log": str(ws / "log"),
        "settings": settings,
    }
    corr = command.correctness(
        **common, out_json=str(r / "correctness.json"), out_md=str(r / "correctness.md"), out_runs=str(r / "runs_c")
    )
    assert corr["status"] == "pass" and corr["device"] == "cuda", corr["error"]
    df = command.bench(
        **common,
        correctness_json=str(r / "correctness.json"),
        out_csv=str(r / "bench.csv"),
        out_samples=str(r / "s.csv"),
        out_meta=str(r / "bench.json"),
        out_runs=str(r / "runs_b"),
    )
    note = json.loads((r / "bench.json").read_text())["timing"]["deciding_clock"]
    print(df[["config_key", "status", "median_us", "profiler_us"]].to_string(), "\n", note)
    assert (df["status"] == "ok").all() and (df["method"] == "command").all()
    if shutil.which("ncu"):
        assert (
            note == "Nsight Compute: mean GPU time per launch of /softmax/, per kopt-class range (a config or a class)"
        )
        assert df["profiler_us"].notna().all() and (df["profiler_us"] > 0).all()
        assert df["profiler_us"].nunique() == 2  # each class its own kernel time
        prof = command.profile(**common, correctness_json=str(r / "correctness.json"), out_dir=str(r / "profile"))
        assert prof["status"] == "ok", prof["error"]
        assert all("softmax" in c["hottest"]["name"] for c in prof["classes"])
        print([(c["class"], c["hottest"]["name"], c["counters"].get("memory_throughput_pct")) for c in prof["classes"]])
