"""The correctness gate: each way a kernel can misbehave is caught, named, and recorded as data (the
step never raises), and nothing is timed. On the CPU through the Triton interpreter (and on a GPU
when one is present)."""

import json

import pytest

from tests.helpers import BAD, run_version


@pytest.mark.parametrize(
    "kernel, status, says",
    [
        ("wrong.py", "incorrect", "outside atol"),
        ("unwritten.py", "incorrect", "NaN where the reference is not (unwritten"),
        ("mutates_input.py", "incorrect", "modified its input(s) ['x']"),
        ("raises.py", "failed", "RuntimeError: boom: unsupported shape"),
        ("dies.py", "failed", "killed by SIGSEGV"),
        ("syntax_error.py", "failed", "syntax_error.py: line 1: SyntaxError"),
        ("no_entry.py", "failed", "defines no run_kernel"),
    ],
)
def test_broken_kernel_fails_the_gate(tiny, tmp_path, run_params, kernel, status, says):
    corr, df, out = run_version(tiny, BAD / kernel, run_params, tmp_path)
    assert corr["status"] == status
    assert says in corr["error"]
    md = (out / "correctness.md").read_text()
    assert ("FAIL" in md) and says.split(":")[0] in md
    # the gate: nothing is timed, every row says why
    assert set(df["status"]) == {"skipped"}
    assert df["median_us"].isna().all()
    assert df["error"].str.contains(f"correctness {status}").all()
    assert json.loads((out / "correctness.json").read_text())["status"] == status
