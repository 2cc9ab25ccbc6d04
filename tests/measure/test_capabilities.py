"""kopt.inside.capabilities: the kernel's process, confined as root, holds no capability, and a
program it runs gets none back; kept only where the GPU driver lets only CAP_SYS_ADMIN read the
performance counters that Nsight Compute's clock reads in that process."""

import os
import subprocess
import sys

import pytest

from kopt.inside import capabilities, sandbox
from tests.helpers import ROOT

SETS = "grep -E '^Cap(Eff|Prm|Bnd|Amb)' /proc/self/status; echo \"$KOPT_CONFINED\""


def _sets(text: str) -> dict[str, int]:
    rows = [ln.split() for ln in text.splitlines() if ln.startswith("Cap")]
    return {name.rstrip(":"): int(value, 16) for name, value in rows}


def test_a_confined_process_and_what_it_runs_hold_no_capability(tmp_path):
    if sandbox.abi() < 1:
        pytest.skip("no Landlock here: the sandbox applies nothing")
    plain = subprocess.run(["/bin/sh", "-c", SETS], capture_output=True, text=True, check=True).stdout
    run = [sys.executable, "-m", "kopt.inside.confined", str(tmp_path / "scratch"), "/bin/sh", "-c", SETS]
    confined = subprocess.run(run, capture_output=True, text=True, cwd=ROOT, timeout=60, check=True).stdout
    line = confined.splitlines()[-1]
    if os.geteuid() == 0 and not capabilities.counters_need_admin():
        assert _sets(plain)["CapEff"] and _sets(plain)["CapBnd"], plain  # root's, so the test can fail
        assert line.endswith("every capability dropped") or "; every capability dropped;" in line, line
        assert _sets(confined) == {"CapEff": 0, "CapPrm": 0, "CapBnd": 0, "CapAmb": 0}, confined
    else:
        assert "no capabilities held" in line or "capabilities kept" in line, line
        assert _sets(confined)["CapEff"] == 0 or capabilities.counters_need_admin(), confined


def test_capabilities_are_kept_where_the_driver_gives_the_counters_to_admins_only(tmp_path):
    params = tmp_path / "params"
    params.write_text("EnableMSI: 1\nRmProfilingAdminOnly: 1\n")
    assert capabilities.counters_need_admin(str(params))
    params.write_text("EnableMSI: 1\nRmProfilingAdminOnly: 0\n")
    assert not capabilities.counters_need_admin(str(params))
    assert not capabilities.counters_need_admin(str(tmp_path / "no driver"))
