"""`kopt init --repo PATH --command CMD`: a git repository and its benchmark command made into a
workspace of kind command, its columns read from one run of the command; what it cannot infer is
one line, and leaves nothing."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from kopt.cli import main
from kopt.formats import repository as rp
from kopt.workspace.target import load_workspace

BENCH = """import os
os.makedirs("out", exist_ok=True)
with open("out/bench.csv", "w") as f:
    f.write("batch,seq_len,err_triton,us_triton,us_torch\\n")
    for seq in (4096, 32768, 65536):
        f.write(f"1,{seq},0,{seq / 400},{seq / 300}\\n")
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> Path:
    r = tmp_path / "attn"
    r.mkdir()
    _git(r, "init", "-q")
    _git(r, "config", "user.email", "t@example.com")
    _git(r, "config", "user.name", "t")
    (r / "bench.py").write_text(BENCH)
    (r / "kernel.py").write_text("import triton\n\n@triton.jit\ndef k(x):\n    pass\n")
    (r / ".gitignore").write_text("out/\n")
    _git(r, "add", "-A")
    _git(r, "commit", "-qm", "the kernel and its benchmark")
    return r


def test_a_repository_and_its_command_become_a_command_target(tmp_path, repo, capsys):
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--repo", str(repo), "--command", "python3 bench.py"]) == 0
    said = capsys.readouterr().out
    target = yaml.safe_load((ws / "target.yaml").read_text())
    assert target["kind"] == "command" and (ws / target["repository"]).resolve() == repo.resolve()
    assert target["csv"] == "out/bench.csv" and target["error_columns"] == ["err_triton"]
    assert target["time_column"] == "us_triton"  # us_torch is a reference's
    assert target["config_columns"] == ["batch", "seq_len"] and target["class_by"] == ["seq_len"]
    assert target["fixed_paths"] == ["bench.py"] and target["language"] == "triton"
    assert (ws / "kernels" / "v0.yaml").read_text() == f"commit: {_git(repo, 'rev-parse', 'HEAD')}\n"
    assert "3 configs" in said and "classes by seq_len" in said and "bench.py" in said
    w = load_workspace(ws)  # the schema and the repository check of every command target
    assert w.command is not None and w.command.time_column == "us_triton"


def test_the_users_choices_are_taken_and_checked(tmp_path, repo):
    ws = tmp_path / "ws"
    rp.init(ws, repo, "python3 bench.py", csv_glob="out/*.csv", time_column="us_torch", class_by=["batch"])
    target = yaml.safe_load((ws / "target.yaml").read_text())
    assert target["csv"] == "out/*.csv" and target["time_column"] == "us_torch" and target["class_by"] == ["batch"]
    with pytest.raises(rp.RepositoryError, match="--class-by err_triton is not a config column"):
        rp.init(tmp_path / "ws2", repo, "python3 bench.py", class_by=["err_triton"])


@pytest.mark.parametrize(
    ("command", "words"),
    [
        ("python3 -c 'import sys; sys.exit(3)'", "exited with code 3"),
        ("true", "wrote no CSV file; name the one to read with --csv"),
        ("python3 -c \"open('a.csv','w').write('n,us_a,us_b,err_x\\\\n1,2,3,0\\\\n')\"", "2 us_* columns"),
        ("python3 -c \"open('a.csv','w').write('n,us_a\\\\n1,2\\\\n')\"", "no err_* column"),
    ],
)
def test_what_cannot_be_inferred_is_one_line_and_leaves_nothing(tmp_path, repo, command, words, capsys):
    ws = tmp_path / "ws"
    assert main(["init", str(ws), "--repo", str(repo), "--command", command]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err, err
    assert not ws.exists() and not list(tmp_path.glob(".ws.kopt-init*"))


def test_a_folder_that_is_not_a_repository_or_a_workspace_that_exists_is_refused(tmp_path, repo):
    with pytest.raises(rp.RepositoryError, match="not a git repository"):
        rp.init(tmp_path / "ws", tmp_path, "true")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(rp.RepositoryError, match="exists and is not empty"):
        rp.init(tmp_path / "full", repo, "python3 bench.py")
    assert main(["init", str(tmp_path / "ws"), "--repo", str(repo)]) == 2  # no --command


def test_kopt_init_alone_writes_a_workspace_to_edit_whose_v0_passes_on_the_cpu(tmp_path, run_params, capsys):
    """The template (kopt/formats/template/): ref.py, a Triton v0, a CUDA solve to rename, target.yaml."""
    from kopt.workspace.cuda_source import solve_params
    from tests.helpers import run_version

    ws = tmp_path / "ws"
    assert main(["init", str(ws)]) == 0
    out = capsys.readouterr().out
    assert "kernels/v1.cu.example" in out
    where = f"--workspace {ws.resolve()} --results {ws.resolve() / 'results'}"  # issue 43: what to run next
    assert f"-m kopt.cli eval v0 {where}" in out and f"-m kopt.cli new {where}" in out, out
    w = load_workspace(ws)
    assert [v.name for v in w.versions] == ["v0"] and w.command is None
    comments = [ln for ln in (ws / "target.yaml").read_text().splitlines() if "#" in ln]
    assert len(comments) >= 6  # each field explained
    corr, df, _ = run_version(ws, ws / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path / "out")
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), corr
    assert [p.name for p in solve_params(ws / "kernels" / "v1.cu.example")] == ["x", "y", "out", "n"]
    assert main(["init", str(ws)]) == 2  # not over a workspace


def test_the_columns_of_a_csv_as_people_write_them(tmp_path, repo):
    """Spaces after the commas, a pandas index column, a time column whose name merely contains
    a reference's word, errors that are not 0 in v0's own run, and a shell script as the command."""
    (repo / "bench.sh").write_text(
        "mkdir -p out; printf ',size, err_max, us_prefill, us_torch\\n0,1024, 3e-07, 12.5, 20\\n1,2048, 0, 22, 40\\n'"
        " > out/r.csv\n"
    )
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a shell benchmark")
    rp.init(tmp_path / "ws", repo, "sh ./bench.sh")
    target = yaml.safe_load((tmp_path / "ws" / "target.yaml").read_text())
    assert target["error_columns"] == ["err_max"] and target["time_column"] == "us_prefill"
    assert target["config_columns"] == ["size"] and target["error_tolerance"] == 1e-6
    assert target["fixed_paths"] == ["bench.sh"]
    with pytest.raises(rp.RepositoryError, match="a glob inside the repository"):
        rp.init(tmp_path / "ws2", repo, "sh ./bench.sh", csv_glob="/tmp/x.csv")


def test_a_command_whose_script_holds_the_kernel_fixes_nothing(tmp_path, repo):
    (repo / "bench.py").write_text(BENCH + "\nimport triton\n\n@triton.jit\ndef k(x):\n    pass\n")
    _git(repo, "commit", "-qam", "the kernel inside the benchmark")
    rp.init(tmp_path / "ws", repo, "python3 bench.py")
    assert yaml.safe_load((tmp_path / "ws" / "target.yaml").read_text())["fixed_paths"] == []
