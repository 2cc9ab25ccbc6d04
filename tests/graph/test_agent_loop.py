"""The loop driven through the CLI alone, as an agent drives it (docs/agent.md), on a copy of the
example cut to v0 and v1, v0 judged, on the CPU: status --json -> eval -> new (a draft the graph
skips) -> an incorrect version -> repair -> eval, asserting on the JSON at each step. The split and stop
steps run on recorded comparisons in tests/test_cli.py (CPU-interpreter verdicts never split or
stop the loop)."""

import json
import shutil
from pathlib import Path

import pytest
import yaml

from kopt.cli import main as kopt
from kopt.cli.loop import EXIT, outcome
from tests.helpers import BAD, copy_tree

pytestmark = pytest.mark.e2e
CPU = ["--config", "device=cpu"]


@pytest.fixture
def project(tmp_path, monkeypatch, softmax_graph):
    """The example's graph built to v0 (this test run's shared build, tests/conftest.py), copied, its
    kernels cut to v0 and v1: the agent starts from the judged baseline."""
    dst = copy_tree(softmax_graph("v0"), tmp_path)
    for k in (dst / "examples" / "softmax" / "kernels").iterdir():
        if k.stem not in ("v0", "v1"):
            k.unlink()
    monkeypatch.chdir(dst)
    return dst


def _status(capsys) -> dict:
    assert kopt(["status", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _eval(capsys, *version) -> tuple[int, str]:
    rc = kopt(["eval", *version, *CPU])
    out = capsys.readouterr()
    return rc, out.out + out.err


def _write_meta(path: Path, **fields) -> None:
    meta = yaml.safe_load(path.read_text())
    meta.update(fields)
    path.write_text(yaml.safe_dump(meta, sort_keys=False))


def test_an_agent_runs_the_loop_through_the_cli(project, capsys):
    kernels = project / "examples" / "softmax" / "kernels"
    assert _status(capsys)["next"] == {"action": "evaluate", "version": "v1", "command": "kopt eval v1"}

    rc, out = _eval(capsys)
    comp = json.loads((project / "results" / "v1" / "compare.json").read_text())
    assert rc == EXIT[outcome(comp, {})] and out.startswith(f"v1: {comp['decision']}"), out
    st = _status(capsys)
    assert st["after"] == "v1" and st["best"] in ("v0", "v1") and set(st["classes"]) == {"N=256", "N=2048", "N=16384"}
    assert all(c["directions"] and c["time_us"] > 0 for c in st["classes"].values()), st["classes"]
    assert st["next"]["action"] == "new" and st["next"]["from"] == st["best"]

    assert kopt(["new"]) == 0  # a copy of the best, its metadata still TODO: a draft
    capsys.readouterr()
    st = _status(capsys)
    assert st["drafts"] == ["v2"] and st["next"] == {
        "action": "finish-draft",
        "version": "v2",
        "why": "its metadata still says TODO",
    }
    assert _eval(capsys, "v1")[0] == EXIT[outcome(comp, {})]  # the draft does not stop the graph

    shutil.copy(BAD / "wrong.py", kernels / "v2.py")
    _write_meta(kernels / "v2.yaml", hypothesis="drop the normalisation", rationale="fewer passes", expected="faster")
    rc, out = _eval(capsys)
    assert rc == EXIT["incorrect"] and out.startswith("v2: discard (incorrect)"), out
    nxt = _status(capsys)["next"]
    assert nxt["action"] == "repair" and (nxt["version"], nxt["proposal"], nxt["attempt"], nxt["of"]) == (
        "v2",
        "v2",
        1,
        3,
    )

    assert kopt(["new", "--repair", "v2"]) == 0
    capsys.readouterr()
    meta = yaml.safe_load((kernels / "v3.yaml").read_text())
    assert meta["repair_of"] == "v2" and meta["hypothesis"] == "drop the normalisation"
    assert meta["rationale"].startswith("TODO: what was wrong") and "repair 1 of 3" in meta["rationale"]
    assert _status(capsys)["next"]["action"] == "finish-draft"
    shutil.copy(kernels / "v1.py", kernels / "v3.py")
    _write_meta(kernels / "v3.yaml", rationale="v2 forgot to divide by the row sum; v3 divides")
    rc, out = _eval(capsys)
    comp = json.loads((project / "results" / "v3" / "compare.json").read_text())
    assert comp["repair_of"] == "v2" and rc == EXIT[outcome(comp, {})] and rc != EXIT["incorrect"], out
    st = json.loads((project / "results" / "state.json").read_text())  # the graph's record: the same builder
    assert st["after"] == "v3" and st["next"]["action"] in ("new", "split") and st["versions"][-1] == "v3"
