"""The kopt command: new, status, mask/unmask and the experience subcommands."""

import json
import shutil

import pytest

from kopt.cli import main as kopt
from kopt.workspace.target import WorkspaceError, load_workspace
from tests.helpers import ROOT


@pytest.fixture
def ws(tmp_path):
    dst = tmp_path / "softmax"
    shutil.copytree(ROOT / "examples" / "softmax", dst)
    return dst


def test_kopt_new_status_mask(ws, tmp_path, capsys):
    results = tmp_path / "results"
    assert kopt(["status", "--workspace", str(ws), "--results", str(results)]) == 0
    assert "no results yet" in capsys.readouterr().out
    assert kopt(["new", "--workspace", str(ws), "--results", str(results), "--from", "v1"]) == 0
    assert (ws / "kernels" / "v8.py").read_text() == (ws / "kernels" / "v1.py").read_text()
    w = load_workspace(ws)  # v8 still says TODO: a draft, which the graph skips
    assert w.drafts == ["v8"] and w.versions[-1].name == "v7"
    with pytest.raises(WorkspaceError, match=r"v8\.yaml: v8 is a draft \(TODO fields\): fill them in first"):
        w.version("v8")
    (ws / "kernels" / "v8.yaml").unlink()
    (ws / "kernels" / "v8.py").unlink()
    assert kopt(["mask", "--workspace", str(ws), "v2"]) == 0
    assert load_workspace(ws).version("v2").masked
    assert kopt(["unmask", "--workspace", str(ws), "v2"]) == 0
    assert not load_workspace(ws).version("v2").masked
    (results / "v7").mkdir(parents=True)
    (results / "workspace.json").write_text(json.dumps({"workspace": str(ws)}))  # whose tree this is
    state = {"best": {"version": "v1", "medians": {}}, "consecutive_regressions": 2, "stop": False}
    comp = {"version": "v7", "best_after": "v1", "state": state, "decision": "discard", "reason": "regression"}
    (results / "v7" / "compare.json").write_text(json.dumps(comp))
    kopt(["status", "--workspace", str(ws), "--results", str(results)])  # from the last comparison
    out = capsys.readouterr().out
    assert "best: v1  (state after v7)" in out and "consecutive regressions: 2" in out
    comp["state"].update(stop=True, stop_reason="target reached")
    (results / "v7" / "compare.json").write_text(json.dumps(comp))
    kopt(["status", "--workspace", str(ws), "--results", str(results)])
    out = capsys.readouterr().out
    assert "best: v1" in out and "STOP: target reached" in out
    assert kopt(["mask", "--workspace", str(ws), "v99"]) == 2  # a clear error, not a traceback
    assert "no version v99" in capsys.readouterr().err


def test_kopt_experience_commands(tmp_path, capsys):
    db = str(tmp_path / "e.sqlite")
    args = ["--kernel-type", "softmax", "--backend", "triton", "--chip", "H100", "--bottleneck", "memory-bound"]
    assert (
        kopt(
            [
                "experience",
                "--db",
                db,
                "add",
                *args,
                "--strategy",
                "vector-width",
                "--hypothesis",
                "float4",
                "--outcome",
                "keep",
            ]
        )
        == 0
    )
    assert kopt(["experience", "--db", db, "recommend", *args, "-n", "2"]) == 0
    out = capsys.readouterr().out
    assert "1. vector-width" in out and "1 kept of 1 tried" in out
    assert kopt(["experience", "--db", db, "stats"]) == 0 and '"entries": 1' in capsys.readouterr().out
    other = str(tmp_path / "other.sqlite")
    assert (
        kopt(
            [
                "experience",
                "--db",
                other,
                "add",
                *args,
                "--strategy",
                "fuse-passes",
                "--hypothesis",
                "one pass",
                "--outcome",
                "keep",
            ]
        )
        == 0
    )
    for cmd in (["list"], ["search", "float4"], ["merge", other]):
        assert kopt(["experience", "--db", db, *cmd]) == 0
    assert "merged 1 new entries" in capsys.readouterr().out
    assert kopt(["experience", "--db", db, "merge", db]) == 2  # into itself: refused with a message
    assert "into itself" in capsys.readouterr().err


def _recorded(ws, results, comp):
    """A results tree whose last comparison (v7's) is ``comp``."""
    (results / "v7").mkdir(parents=True, exist_ok=True)
    (results / "workspace.json").write_text(json.dumps({"workspace": str(ws)}))
    (results / "v7" / "compare.json").write_text(json.dumps({"version": "v7", **comp}))
    return ["--workspace", str(ws), "--results", str(results)]


def _state(best="v1", **st):
    return {"best": {"version": best} if best else None, "consecutive_regressions": 0, "stop": False, **st}


def test_a_proposed_split_is_the_next_action_and_kopt_new_split_writes_it(ws, tmp_path, capsys):
    split = {
        "improved": ["N=256"],
        "regressed": ["N=2048"],
        "dispatch": [{"when": {"N": [256]}, "use": "v7"}, {"use": "v1"}],
    }
    comp = {
        "state": _state(),
        "decision": "split-recommended",
        "reason": "improved and regressed classes",
        "detail": "d",
        "split": split,
    }
    args = _recorded(ws, tmp_path / "results", comp)
    assert kopt(["status", "--json", *args]) == 0
    nxt = json.loads(capsys.readouterr().out)["next"]
    assert (
        nxt["action"] == "split"
        and nxt["dispatch"] == split["dispatch"]
        and nxt["command"].startswith("kopt new --split --workspace")
    )
    assert kopt(["new", "--split", *args]) == 0
    v8 = load_workspace(ws).version("v8")  # written in full: not a draft
    assert v8.kind == "dispatch" and v8.meta["dispatch"] == split["dispatch"] and v8.meta["parent"] == "v1"


def test_a_stopped_loop_says_stop_and_eval_exits_14(ws, tmp_path, capsys):
    from kopt.cli.loop import EXIT, outcome

    comp = {
        "state": _state(stop=True, stop_reason="5 consecutive regressions"),
        "decision": "discard",
        "reason": "regression",
    }
    args = _recorded(ws, tmp_path / "results", comp)
    assert kopt(["status", "--json", *args]) == 0
    st = json.loads(capsys.readouterr().out)
    assert st["next"] == {"action": "stop", "reason": "5 consecutive regressions"} and st["stop"] is True
    assert EXIT[outcome(comp, st)] == 14


def test_kopt_new_refuses_without_a_correct_version_and_a_repair_of_a_passing_one(ws, tmp_path, capsys):
    comp = {"state": _state(best=None, broken=["v7"]), "decision": "discard", "reason": "incorrect", "detail": "NaN"}
    args = _recorded(ws, tmp_path / "results", comp)
    assert kopt(["new", *args]) == 2
    assert "no correct version to start from yet (next: kopt new --repair v7" in capsys.readouterr().err
    (tmp_path / "results" / "v6").mkdir()
    (tmp_path / "results" / "v6" / "compare.json").write_text(
        json.dumps({"version": "v6", "decision": "keep", "reason": "improved"})
    )
    assert kopt(["new", "--repair", "v6", *args]) == 2
    assert "v6 is not incorrect or failed, so there is nothing to repair" in capsys.readouterr().err
    # v6 repaired by v7, a passing repair (the fold took v6 out of broken): one more would be refused unjudged
    comp = {"state": _state(best="v7", broken=[]), "decision": "keep", "reason": "improved", "repair_of": "v6"}
    args = _recorded(ws, tmp_path / "results2", comp)
    (tmp_path / "results2" / "v6").mkdir()
    (tmp_path / "results2" / "v6" / "compare.json").write_text(json.dumps({"version": "v6", "reason": "incorrect"}))
    assert kopt(["new", "--repair", "v6", *args]) == 2
    assert "v6 was repaired already" in capsys.readouterr().err


def test_experience_recommend_as_json(tmp_path, capsys):
    args = ["--kernel-type", "softmax", "--backend", "triton", "--chip", "H100", "--bottleneck", "memory-bound"]
    assert kopt(["experience", "--db", str(tmp_path / "e.sqlite"), "recommend", *args, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and {"strategy", "score", "keeps", "tries", "idea"} <= set(rows[0])


def test_kopt_new_from_a_dispatching_best_starts_from_its_default_routes_kernel(ws, tmp_path, capsys):
    args = _recorded(ws, tmp_path / "results", {"state": _state(best="v6"), "decision": "keep", "reason": "improved"})
    default = load_workspace(ws).version("v6").meta["dispatch"][-1]["use"]
    assert kopt(["new", *args]) == 0
    assert f"starting from {default}, the kernel of its default route" in capsys.readouterr().out
    assert (ws / "kernels" / "v8.py").read_text() == load_workspace(ws).version(default).kernel.read_text()


def test_kopt_eval_without_a_version_refuses_while_a_draft_waits(ws, tmp_path, capsys):
    args = _recorded(ws, tmp_path / "results", {"state": _state(), "decision": "keep", "reason": "improved"})
    assert kopt(["new", *args]) == 0
    capsys.readouterr()
    assert kopt(["eval", *args]) == 2
    assert (
        "v8.yaml: v8 is a draft (TODO fields): fill it in, or name the version to evaluate" in capsys.readouterr().err
    )


def test_kopt_eval_of_an_earlier_version_builds_the_bests_bottleneck_before_the_state(
    ws, tmp_path, capsys, monkeypatch
):
    """The verdict reads no profile; the state after it does (the roofline target's stop reads the
    best's bottleneck.json): for the last version the graph builds state.json, for an earlier one
    the best's bottleneck.json, so the stop is never read from a missing or stale file."""
    from kopt.cli import loop

    asked = []
    monkeypatch.setattr(loop, "_graph", lambda a, command, target, log: asked.append(target) or True)
    args = _recorded(ws, tmp_path / "results", {"state": _state(), "decision": "keep", "reason": "improved"})
    (tmp_path / "results" / "v3").mkdir()
    comp = {
        "version": "v3",
        "state": _state(best="v2"),
        "best_after": "v2",
        "decision": "discard",
        "reason": "regression",
    }
    (tmp_path / "results" / "v3" / "compare.json").write_text(json.dumps(comp))
    kopt(["eval", "v3", *args])
    kopt(["eval", "v7", *args])
    assert asked == [
        "results/v3/compare.json",
        "results/v2/bottleneck.json",
        "results/v7/compare.json",
        "results/state.json",
    ]
    assert "v3: discard (regression)" in capsys.readouterr().out
