"""Provenance checks, without Snakemake: a result made from other files, one that Snakemake would keep
by its age though it is stale, and whose results a tree holds."""

import json
import os
from pathlib import Path

import pytest

from kopt.workspace.provenance import StaleResult, check_made_from, kept_but_stale, owner_problem
from tests.helpers import _sha


def _made(tmp_path: Path) -> tuple[Path, dict]:
    files = {n: tmp_path / n for n in ("ref.py", "target.yaml", "v1.py")}
    for n, f in files.items():
        f.write_text(n)
    res = tmp_path / "correctness.json"
    res.write_text(
        json.dumps(
            {
                "provenance": {
                    "ref_sha256": _sha(files["ref.py"]),
                    "target_sha256": _sha(files["target.yaml"]),
                    "kernel_sha256": _sha(files["v1.py"]),
                }
            }
        )
    )
    return res, dict(ref=files["ref.py"], target=files["target.yaml"], kernel=files["v1.py"])


def test_check_made_from(tmp_path):
    res, files = _made(tmp_path)
    check_made_from(res, **files)
    files["kernel"].write_text("another kernel")
    with pytest.raises(
        StaleResult,
        match=r"correctness.json was made from another .*v1.py .*--forcerun .*correctness.json after the targets",
    ):
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
