"""kopt.loop.state: the state a reader sees (state.json, `kopt status --json`, `kopt eval`), built
in one place: the fold's state, the best version's figures per class, and the next action."""

import json

import pandas as pd
import pytest

from kopt.loop import state
from kopt.loop.state import next_action, record, summary


def _compare(version, best, stop=False, decision="keep", reason="improved", **extra):
    state = {
        "best": {"version": best} if best else None,
        "consecutive_regressions": 1,
        "stop": stop,
        "stop_reason": "5 consecutive regressions" if stop else None,
        "repairs": {},
        "abandoned": [],
    }
    return {"version": version, "state": state, "decision": decision, "reason": reason, "detail": "why", **extra}


def _tree(tmp_path, comps):
    for comp in comps:
        d = tmp_path / comp["version"]
        d.mkdir()
        (d / "compare.json").write_text(json.dumps(comp))
    return tmp_path


def test_summary_names_the_best_and_the_counters():
    s = summary(_compare("v3", "v1"))
    assert s["after"] == "v3" and s["best"] == "v1" and s["consecutive_regressions"] == 1
    assert s["repairs"] == {} and s["masked"] == [] and s["stop"] is False


def test_the_record_reads_the_last_comparison_and_the_best_versions_figures(tmp_path):
    assert record(tmp_path, ["v0", "v1"], [])["next"] == {
        "action": "evaluate",
        "version": "v1",
        "command": "kopt eval v1",
    }
    _tree(tmp_path, [_compare("v0", "v0", decision="baseline"), _compare("v1", "v1")])
    pd.DataFrame(
        [
            {"config_key": "a", "config_class": "N=64", "status": "ok", "median_us": 4.0, "profiler_us": 2.0},
            {"config_key": "b", "config_class": "N=64", "status": "ok", "median_us": 16.0, "profiler_us": 8.0},
        ]
    ).to_csv(tmp_path / "v1" / "bench.csv", index=False)
    direction = {"id": "fuse-passes", "idea": "read once", "evidence": "DRAM moved 2x", "metric": "bytes"}
    bn = {
        "target_fraction": 0.9,
        "classes": [
            {
                "class": "N=64",
                "roofline_fraction_min": 0.6,
                "bottleneck": "memory-bound",
                "next_directions": [direction],
            }
        ],
    }
    (tmp_path / "v1" / "bottleneck.json").write_text(json.dumps(bn))
    (tmp_path / "state.json").write_text(json.dumps({"after": "v0", "best": "v0"}))  # never read: stale or not
    doc = record(tmp_path, ["v0", "v1"], [])
    assert doc["best"] == "v1" and doc["after"] == "v1" and doc["last"]["decision"] == "keep"
    assert doc["classes"]["N=64"] == {
        "time_us": 4.0,
        "clock": "profiler_us",
        "roofline_fraction": 0.6,
        "gap": 0.3,
        "bottleneck": "memory-bound",
        "directions": [{"id": "fuse-passes", "idea": "read once", "evidence": "DRAM moved 2x"}],
    }
    assert doc["next"]["action"] == "new" and doc["next"]["from"] == "v1"
    assert doc["next"]["from_evidence"]["N=64"]["directions"][0]["evidence"] == "DRAM moved 2x"


@pytest.mark.parametrize(
    "method,status,reached,stops",
    [("events", "ok", True, True), ("events", "ok", False, False), ("events", "skipped", True, False),
     ("cpu-interpreter", "ok", True, False)],
)  # fmt: skip
def test_the_best_at_its_roofline_target_stops_the_loop_once_profiled(tmp_path, method, status, reached, stops):
    """The decision reads no profile, so the stop at the target comes from the best's bottleneck.json
    when it is written, on a GPU's timings only."""
    _tree(tmp_path, [_compare("v0", "v0", decision="baseline"), _compare("v1", "v1")])
    assert not record(tmp_path, ["v0", "v1"], [])["stop"]  # not profiled yet
    pd.DataFrame([{"config_key": "a", "config_class": "A", "status": "ok", "median_us": 4.0, "method": method}]).to_csv(
        tmp_path / "v1" / "bench.csv", index=False
    )
    bn = {"status": status, "target_fraction": 0.9, "classes": [], "target_reached_all": reached}
    (tmp_path / "v1" / "bottleneck.json").write_text(json.dumps(bn))
    doc = record(tmp_path, ["v0", "v1"], [])
    assert doc["stop"] is stops and (doc["next"]["action"] == "stop") is stops
    if stops:
        assert doc["stop_reason"] == "target reached: v1 is at the roofline target on every class"


def test_a_best_whose_keep_is_untrusted_stops_nothing_at_its_roofline_target(tmp_path):
    """A keep the judge did not measure itself (by hand, a command's own CSV, a fixed seed, a clock
    in the kernel's process) cannot end the loop at the roofline target."""
    _tree(tmp_path, [_compare("v0", "v0", decision="baseline"), _compare("v1", "v1")])
    bn = {"status": "ok", "target_fraction": 0.9, "classes": [], "target_reached_all": True}
    (tmp_path / "v1" / "bottleneck.json").write_text(json.dumps(bn))
    row = {"config_key": "a", "config_class": "A", "status": "ok", "median_us": 4.0, "method": "events"}
    pd.DataFrame([row]).to_csv(tmp_path / "v1" / "bench.csv", index=False)
    assert record(tmp_path, ["v0", "v1"], [])["stop"] is True
    comp = json.loads((tmp_path / "v1" / "compare.json").read_text())
    (tmp_path / "v1" / "compare.json").write_text(json.dumps({**comp, "untrusted": "untrusted: settled by hand"}))
    assert record(tmp_path, ["v0", "v1"], [])["stop"] is False


def _state(comp, **st):
    return {**summary(comp), **st}


@pytest.mark.parametrize(
    ("comp", "state", "missing", "drafts", "want"),
    [
        (_compare("v3", "v1", stop=True), {}, [], [], {"action": "stop", "reason": "5 consecutive regressions"}),
        (
            _compare("v3", "v1"),
            {},
            ["v4", "v5"],
            [],
            {"action": "evaluate", "version": "v5", "command": "kopt eval v5"},
        ),
        (
            _compare("v3", "v1"),
            {},
            [],
            ["v4"],
            {"action": "finish-draft", "version": "v4", "why": "its metadata still says TODO"},
        ),
        (
            _compare(
                "v3",
                "v1",
                decision="split-recommended",
                split={"dispatch": [{"when": {"N": [64]}, "use": "v3"}, {"use": "v1"}]},
            ),
            {},
            [],
            [],
            {
                "action": "split",
                "dispatch": [{"when": {"N": [64]}, "use": "v3"}, {"use": "v1"}],
                "command": "kopt new --split",
            },
        ),
        (
            _compare("v3", "v1", decision="discard", reason="incorrect"),
            {"broken": ["v3"]},
            [],
            [],
            {
                "action": "repair",
                "version": "v3",
                "proposal": "v3",
                "attempt": 1,
                "of": 3,
                "why": "why",
                "command": "kopt new --repair v3",
            },
        ),
        (
            _compare("v5", "v1", decision="discard", reason="failed", repair_of="v3"),
            {"repairs": {"v3": 2}, "broken": ["v3", "v4", "v5"]},
            [],
            [],
            {
                "action": "repair",
                "version": "v5",
                "proposal": "v3",
                "attempt": 3,
                "of": 3,
                "why": "why",
                "command": "kopt new --repair v5",
            },
        ),
        (
            _compare("v6", "v1", decision="discard", reason="incorrect", repair_of="v3"),
            {"repairs": {"v3": 3}, "abandoned": ["v3"], "broken": ["v3", "v6"]},
            [],
            [],
            {"action": "new", "from": "v1", "command": "kopt new"},
        ),
        (
            _compare("v0", None, decision="discard", reason="incorrect"),
            {"abandoned": ["v0"], "broken": ["v0"]},
            [],
            [],
            {"action": "stop", "reason": "no correct version and nothing left to repair: write a new v0"},
        ),
    ],
)
def test_the_next_action_follows_the_state(comp, state, missing, drafts, want):
    assert next_action(_state(comp, **state), comp, missing, drafts) == want


def test_no_repair_for_a_failure_the_fold_does_not_count_as_broken_and_no_split_for_a_command_target():
    comp = _compare("v3", "v1", decision="discard", reason="failed")  # e.g. configs that differ from v0's
    assert next_action(_state(comp), comp, [], []) == {"action": "new", "from": "v1", "command": "kopt new"}
    split = {"dispatch": [{"when": {"N": [64]}, "use": "v3"}, {"use": "v1"}]}
    comp = _compare("v3", "v1", decision="split-recommended", split=split)
    assert next_action(_state(comp), comp, [], [], can_split=False)["action"] == "new"


def test_the_next_step_reads_as_a_sentence():
    split = {"action": "split", "command": "kopt new --split", "dispatch": [
        {"when": {"shape": ["square", "tall"]}, "use": "v5"}, {"use": "v4"}]}  # fmt: skip
    assert state.describe_next(split) == "kopt new --split   (dispatch: shape square or tall to v5; the rest to v4)"
    assert state.describe_next({"action": "stop", "reason": "5 consecutive regressions"}).startswith("STOP: 5")
