"""A benchmark command's CSV (err_<impl>, us_<impl> per config) read into one record per config."""

from pathlib import Path

import pytest

from kopt.profilers.command_csv import read
from kopt.workspace.command import CommandSpec
from kopt.workspace.target import WorkspaceError

SPEC = CommandSpec(Path("."), "bench", "*.csv", "us_triton", ["seq_len"], None, 1e-3, None, None, 3, [], "cuda")


def _csv(tmp_path: Path, name: str, rows: list[str]) -> Path:
    p = tmp_path / name
    p.write_text("batch,seq_len,err_triton,err_ref,us_triton,us_ref\n" + "\n".join(rows) + "\n")
    return p


def test_repeats_give_each_config_its_times_and_worst_error(tmp_path):
    runs = [
        _csv(tmp_path, "a.csv", ["1,4096,0,0,10.0,12.0", "1,32768,0.0004,0,50.0,80.0"]),
        _csv(tmp_path, "b.csv", ["1,4096,0,0,11.0,12.0", "1,32768,0.0009,0,49.0,80.0"]),
        _csv(tmp_path, "c.csv", ["1,4096,0,0,30.0,12.0", "1,32768,0.0002,0,51.0,80.0"]),
    ]
    short, long = read(runs, SPEC)
    assert short["key"] == "batch=1,seq_len=4096" and short["class"] == "seq_len=4096"
    assert short["times_us"] == [10.0, 11.0, 30.0] and short["median_us"] == 11.0 and short["ok"]
    assert long["errors"] == {"err_triton": 0.0009, "err_ref": 0.0} and long["ok"] and long["median_us"] == 50.0


def test_an_error_over_the_tolerance_a_nan_or_a_missing_run_fails_the_config(tmp_path):
    runs = [
        _csv(tmp_path, "a.csv", ["1,4096,0.01,0,10,12", "1,8192,nan,0,20,20", "1,16384,0,0,5,5"]),
        _csv(tmp_path, "b.csv", ["1,4096,0,0,10,12", "1,8192,0,0,20,20"]),
    ]
    over, nan, missing = read(runs, SPEC)
    assert not over["ok"] and over["reason"] == "err_triton = 0.01 (over the tolerance 0.001)"
    assert not nan["ok"] and "err_triton = inf" in nan["reason"]
    assert not missing["ok"] and missing["reason"] == "missing from 1 of 2 runs"


def test_a_csv_without_the_named_columns_is_one_line(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("seq_len,err_triton,us_other\n4096,0,1\n")
    with pytest.raises(WorkspaceError, match=r"bad\.csv: no column us_triton"):
        read([bad], SPEC)
    with pytest.raises(WorkspaceError, match=r"wrote no CSV matching \*\.csv"):
        read([], SPEC)
    nocls = tmp_path / "nocls.csv"
    nocls.write_text("batch,err_triton,us_triton\n1,0,1\n")
    with pytest.raises(WorkspaceError, match=r"column seq_len is not a config column of the CSV \['batch'\]"):
        read([nocls], SPEC)
