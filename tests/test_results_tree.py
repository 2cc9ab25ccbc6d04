"""Issue 10, item 1: one results tree per workspace, results reused only when their recorded
provenance matches, -d DIR, and commands printed complete for the workspace in use."""

import hashlib
import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

from kopt.cli import main as kopt
from kopt.workspace.commands import for_target, from_results, overrides, snakemake_command
from kopt.workspace.provenance import StaleResult, check_made_from, kept_but_stale, owner_problem
from tests.test_e2e import copy_project, snakemake


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def _second_workspace(project: Path) -> Path:
    """examples/softmax_b: the softmax target under another name and with other CPU shapes."""
    b = project / "examples" / "softmax_b"
    shutil.copytree(project / "examples" / "softmax", b)
    t = b / "target.yaml"
    text = t.read_text()
    assert "name: softmax" in text and "M: 48" in text
    t.write_text(text.replace("name: softmax", "name: softmax_b").replace("M: 48", "M: 40"))
    for k in b.glob("kernels/v*"):
        if k.stem != "v0":
            k.unlink()
    return b


def _tree(results: Path) -> dict:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in results.rglob("*") if p.is_file()}


def test_two_workspaces_in_one_project_never_mix(tmp_path, monkeypatch, capsys):
    dst = copy_project(tmp_path)
    b = _second_workspace(dst)
    p = snakemake(dst, "results/v0/compare.json")
    assert p.returncode == 0, p.stdout + p.stderr
    before = _tree(dst / "results")
    for extra in ((), ("--rerun-triggers", "mtime")):  # mtime: what let B reuse A's results before
        p = snakemake(dst, "results/v0/compare.json", *extra, config=["workspace=examples/softmax_b"])
        out = p.stdout + p.stderr
        assert p.returncode != 0
        assert "kopt: results/ holds the results of workspace examples/softmax (results/workspace.json), not" in out
        # the hint is complete: the --config values of this run come with it
        assert "snakemake -d runs/softmax_b --cores 1 <targets> --config workspace=examples/softmax_b device=cpu" in out
    assert _tree(dst / "results") == before  # refused: nothing overwritten, nothing mixed

    # isolated: B in its own folder (-d), its workspace found from the workflow's folder
    p = snakemake(dst, "-d", "runs/b", "results/v0/compare.json", config=["workspace=examples/softmax_b"])
    assert p.returncode == 0, p.stdout + p.stderr
    a = json.loads((dst / "results" / "v0" / "correctness.json").read_text())["provenance"]
    bb = json.loads((dst / "runs" / "b" / "results" / "v0" / "correctness.json").read_text())["provenance"]
    assert a["target_sha256"] == _sha(dst / "examples" / "softmax" / "target.yaml")
    assert bb["target_sha256"] == _sha(b / "target.yaml") != a["target_sha256"]
    assert json.loads((dst / "runs" / "b" / "results" / "workspace.json").read_text())["workspace"] == str(b.resolve())
    assert _tree(dst / "results") == before

    # kopt refuses the wrong tree too, and prints commands complete for the workspace in use
    monkeypatch.chdir(dst)
    assert kopt(["status", "--workspace", "examples/softmax_b"]) == 2
    assert "holds the results of workspace examples/softmax" in capsys.readouterr().err
    assert kopt(["new", "--workspace", "examples/softmax_b"]) == 2
    assert not (b / "kernels" / "v1.py").exists()
    assert kopt(["status", "--workspace", "examples/softmax_b", "--results", "runs/b/results"]) == 0
    assert "next: kopt new --workspace examples/softmax_b --results runs/b/results" in capsys.readouterr().out
    assert kopt(["new", "--workspace", "examples/softmax_b", "--results", "runs/b/results"]) == 0
    hint = "snakemake -d runs/b --cores 1 results/v1/compare.json --config workspace=examples/softmax_b"
    assert hint in capsys.readouterr().out


def test_a_result_kept_by_its_age_but_made_from_other_files_is_rebuilt(tmp_path):
    """A kernel copied with its old modification time: Snakemake would keep its results. v0 lies
    below the requested target and its results exist (where Snakemake ignores an input function's
    error), and --rerun-triggers mtime, without .snakemake's records, sees no other change."""
    dst = copy_project(tmp_path)
    assert snakemake(dst, "results/v1/compare.json").returncode == 0
    shutil.rmtree(dst / ".snakemake" / "metadata")
    k = dst / "examples" / "softmax" / "kernels" / "v0.py"
    st = k.stat()
    k.write_text(k.read_text() + "\n# changed, then given its old time back (cp -p, tar, rsync -t)\n")
    os.utime(k, ns=(st.st_atime_ns, st.st_mtime_ns))
    p = snakemake(dst, "results/v1/compare.json", "--rerun-triggers", "mtime")
    out = p.stdout + p.stderr
    assert p.returncode == 0, out
    assert (
        "kopt: results/v0/correctness.json was made from another examples/softmax/kernels/v0.py (sha256 "
        in out and "it will be rebuilt, with everything made from it" in out
    )
    for made in ("correctness", "compare"):
        prov = json.loads((dst / "results" / "v0" / f"{made}.json").read_text())["provenance"]
        assert prov["kernel_sha256"] == _sha(k)
    # v1 was decided again, against the new v0's timings
    v0 = pd.read_csv(dst / "results" / "v0" / "bench.csv").set_index("config_class")["median_us"]
    best = {c["class"]: c["best_us"] for c in json.loads((dst / "results" / "v1" / "compare.json").read_text())["per_class"]}
    assert best.keys() == set(v0.index) and all(best[c] == pytest.approx(v0[c], rel=1e-9) for c in best)
    p = snakemake(dst, "results/v1/compare.json", "--rerun-triggers", "mtime")
    assert "Nothing to be done" in p.stdout + p.stderr and "kopt:" not in p.stdout + p.stderr


def test_d_dir_puts_results_there(tmp_path):
    (tmp_path / "project").mkdir()
    dst = copy_project(tmp_path / "project")
    p = snakemake(dst, "-d", str(tmp_path / "elsewhere"), "results/v0/compare.json")
    assert p.returncode == 0, p.stdout + p.stderr
    assert (tmp_path / "elsewhere" / "results" / "v0" / "compare.json").is_file()
    assert not (dst / "results").exists()


# --- the pieces, without Snakemake -----------------------------------------------------------


def _made(tmp_path: Path) -> tuple[Path, dict]:
    files = {n: tmp_path / n for n in ("ref.py", "target.yaml", "v1.py")}
    for n, f in files.items():
        f.write_text(n)
    res = tmp_path / "correctness.json"
    res.write_text(json.dumps({"provenance": {"ref_sha256": _sha(files["ref.py"]), "target_sha256": _sha(files["target.yaml"]),
                                              "kernel_sha256": _sha(files["v1.py"])}}))
    return res, dict(ref=files["ref.py"], target=files["target.yaml"], kernel=files["v1.py"])


def test_check_made_from(tmp_path):
    res, files = _made(tmp_path)
    check_made_from(res, **files)
    files["kernel"].write_text("another kernel")
    with pytest.raises(StaleResult, match=r"correctness.json was made from another .*v1.py .*--forcerun .*correctness.json after the targets"):
        check_made_from(res, **files)
    files["ref"].write_text("another reference")  # every result is stale: rebuild from the reference
    with pytest.raises(StaleResult, match=r"made from another .*ref.py .*--forcerun reference after the targets"):
        check_made_from(res, **files)


def test_kept_but_stale_only_when_snakemake_would_keep_it(tmp_path):
    res, files = _made(tmp_path)
    files["kernel"].write_text("another kernel")
    for f in files.values():  # older than the result: Snakemake keeps the result
        os.utime(f, (1e9, 1e9))
    os.utime(res, (1e9 + 100, 1e9 + 100))
    where, why = kept_but_stale(res, **files)
    assert where == str(res) and why.startswith(f"{res} was made from another {files['kernel']} (sha256 ")
    assert "Snakemake would keep it" in why
    legacy = tmp_path / "bench.json"
    legacy.write_text("{}")  # no provenance recorded: named as such
    os.utime(legacy, (1e9 + 150, 1e9 + 150))
    assert kept_but_stale(legacy, **files)[1].startswith(f"{legacy} records no sha256 of {files['ref']}")
    os.utime(files["kernel"], (1e9 + 200, 1e9 + 200))  # newer: Snakemake reruns it anyway
    assert kept_but_stale(res, **files) is None


def test_owner_problem(tmp_path):
    results = tmp_path / "results"
    ws = tmp_path / "examples" / "a"
    ws.mkdir(parents=True)
    assert owner_problem(results, ws) is None  # nothing there yet
    (results / "v0").mkdir(parents=True)
    assert "no " in owner_problem(results, ws) and "whose they are" in owner_problem(results, ws)
    (results / "workspace.json").write_text(json.dumps({"workspace": "examples/a"}))
    assert owner_problem(results, ws) is None
    assert "holds the results of workspace examples/a" in owner_problem(results, tmp_path / "examples" / "b")


def test_commands_put_targets_before_config():
    cmd = snakemake_command("examples/gemm", extra=overrides({"device": "cpu", "noise_pct": 1.0, "bench": {}}, {"device": "auto", "noise_pct": 1.0}))
    assert for_target(cmd, "results/v3/compare.json") == "snakemake --cores 1 results/v3/compare.json --config workspace=examples/gemm device=cpu"
    assert for_target(from_results("w", "runs/x/results"), "t") == "snakemake -d runs/x --cores 1 t --config workspace=w"


def test_kopt_prints_the_command_that_made_the_tree(tmp_path):
    """kopt status/new: the command recorded by the last run (its -s, -d and --config values)."""
    made = "snakemake -s /p/Snakefile -d /p/runs/x --cores 1 {target} --config workspace=w noise_pct=2"
    (tmp_path / "results" / "settings").mkdir(parents=True)
    (tmp_path / "results" / "settings" / "report.json").write_text(json.dumps({"command": made}))
    assert from_results("w", tmp_path / "results") == made
