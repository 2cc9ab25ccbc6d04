"""A judge forked by the zygote (kopt.measure.zygote) is what a judge started afresh is: the asking
process's child, in a session of its own, with the asker's environment (and the variables it adds),
folder, log and a judge's command line; the kernel's process it starts holds nothing of its request;
a zygote whose environment is no longer the asker's is replaced; a judge whose asker gave up never
runs. Linux /proc; on a machine with a GPU no judge is forked (kopt.measure.spare.wanted)."""

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from kopt.measure import runner, spare, zygote
from tests.helpers import ROOT

pytestmark = pytest.mark.skipif(not spare.wanted(), reason="a GPU machine: judges start afresh")

# ref.py as the judge loads it (the reference's process is the judge's): what it sees, as one line
SPY = """import json, os, sys
from pathlib import Path
_stat = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
with open(os.environ["KOPT_TEST_SPY_LOG"], "a") as _f:
    _f.write(json.dumps({
        "parent": int(_stat[1]), "session": int(_stat[3]), "pid": os.getpid(), "cwd": os.getcwd(),
        "path0": sys.path[0], "mark": os.environ.get("KOPT_TEST_MARK"), "threads": os.environ.get("OMP_NUM_THREADS"), "added": os.environ.get("KOPT_TEST_ADDED"),
        "command": Path("/proc/self/cmdline").read_bytes().replace(b"\\0", b" ").decode().split("kopt.measure.child")[-1].split(),
        "stdin": os.readlink("/proc/self/fd/0"),
    }) + "\\n")
"""


@pytest.fixture
def spied(tiny, tmp_path, monkeypatch) -> Path:
    """The tiny workspace with a ref.py that logs, when the judge loads it, what the judge is."""
    (tiny / "ref.py").write_text(SPY + (ROOT / "examples" / "softmax" / "ref.py").read_text())
    monkeypatch.setenv("KOPT_TEST_SPY_LOG", str(tmp_path / "spy.jsonl"))
    monkeypatch.setenv("KOPT_TEST_MARK", "the asker's")
    monkeypatch.chdir(tmp_path)
    return tiny


def _judge(ws: Path, log: Path, nth: int, monkeypatch) -> dict:
    """The reference task judged as this process's ``nth`` judge (the first starts afresh)."""
    from kopt.steps.common import child_request
    from kopt.workspace.target import load_workspace

    monkeypatch.setitem(zygote.Zygote.asked, os.getpid(), nth - 1)
    request = child_request(load_workspace(ws, versions=False), str(ws / "kernels" / "v0.py"), {"device": "cpu"})
    with runner.Child("reference", request, env={"KOPT_TEST_ADDED": "by the runner"}, log_path=log) as child:
        forked = not isinstance(child.proc, subprocess.Popen)
        out = child.wait(timeout_s=60)
    assert out.ok, out.error + out.log_tail
    lines = Path(os.environ["KOPT_TEST_SPY_LOG"]).read_text().splitlines()
    return {**json.loads(lines[-1]), "forked": forked, "log": log.read_text()}


def test_a_forked_judge_is_what_a_judge_started_afresh_is(spied, tmp_path, monkeypatch):
    afresh = _judge(spied, tmp_path / "afresh.log", 1, monkeypatch)
    forked = _judge(spied, tmp_path / "forked.log", 2, monkeypatch)
    assert not afresh["forked"] and forked["forked"]  # else this test compares nothing
    for judge in (afresh, forked):
        assert judge["parent"] == os.getpid() and judge["session"] == judge["pid"], judge
        assert judge["cwd"] == judge["path0"] == str(tmp_path), judge
        assert judge["mark"] == "the asker's" and judge["added"] == "by the runner", judge
        assert judge["command"][0] == "reference" and judge["stdin"] == "/dev/null", judge
        assert "config " in judge["log"], judge["log"]  # its progress lines in its own log
    assert len(afresh["command"]) == len(forked["command"]) == 4


def test_a_zygote_serves_each_asker_folder_and_is_replaced_when_its_environment_changed(spied, tmp_path, monkeypatch):
    _judge(spied, tmp_path / "1.log", 2, monkeypatch)
    first = zygote.pids()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # a folder is no reason to replace it: each judge gets the asker's
    judge = _judge(spied, tmp_path / "2.log", 2, monkeypatch)
    assert judge["forked"] and zygote.pids() == first
    assert judge["cwd"] == judge["path0"] == str(tmp_path / "elsewhere"), judge
    monkeypatch.setenv("KOPT_TEST_MARK", "changed")  # kopt's own: read where used, never at import
    judge = _judge(spied, tmp_path / "3.log", 2, monkeypatch)
    assert judge["forked"] and judge["mark"] == "changed" and zygote.pids() == first
    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # read as libgomp loads: the zygote's own would stay
    judge = _judge(spied, tmp_path / "4.log", 2, monkeypatch)
    assert judge["forked"] and judge["threads"] == "1" and zygote.pids() != first
    assert all(not Path(f"/proc/{pid}").exists() for pid in first)  # the old one ended


def test_a_judge_whose_asker_gave_up_never_runs(spied, tmp_path, monkeypatch):
    """The asker stops waiting once the zygote has forked the judge (here: its answer cannot be
    read): that judge never gets its go and ends, the job starts its judge afresh instead, and
    only that one runs."""
    forked: list[int] = []

    def unreadable(pid: int):
        forked.append(pid)
        raise OSError("the answer could not be read")

    monkeypatch.setattr(zygote.spare, "Forked", unreadable)
    judge = _judge(spied, tmp_path / "log", 2, monkeypatch)
    assert forked and not judge["forked"] and zygote.Zygote.current is None
    deadline = time.monotonic() + 30
    while not _ended(forked[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _ended(forked[0]), "the judge its asker gave up on is still there"
    assert len(Path(os.environ["KOPT_TEST_SPY_LOG"]).read_text().splitlines()) == 1  # ref.py loaded once


def _ended(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True
