"""kopt.loop.state: the state a reader sees, built in one place for state.json and `kopt status`."""

import json

from kopt.loop.state import latest, summary


def _compare(version, best, stop=False):
    state = {"best": {"version": best}, "consecutive_regressions": 1, "stop": stop, "stop_reason": None}
    return {"version": version, "state": state}


def test_summary_names_the_best_and_the_counters():
    s = summary(_compare("v3", "v1"))
    assert s["after"] == "v3" and s["best"] == "v1" and s["consecutive_regressions"] == 1
    assert s["repairs"] == {} and s["masked"] == [] and s["stop"] is False


def test_latest_reads_the_last_comparison_and_a_state_json_only_of_that_version(tmp_path):
    assert latest(tmp_path, ["v0", "v1"]) is None
    for v, best in (("v0", "v0"), ("v1", "v1")):
        (tmp_path / v).mkdir()
        (tmp_path / v / "compare.json").write_text(json.dumps(_compare(v, best)))
    (tmp_path / "state.json").write_text(json.dumps({"after": "v0", "best": "v0", "stop": True}))
    assert latest(tmp_path, ["v0", "v1"])["best"] == "v1"  # a state.json left from v0 is not shown
    (tmp_path / "state.json").write_text(json.dumps({"after": "v1", "best": "v1", "stop": True}))
    assert latest(tmp_path, ["v0", "v1"])["stop"] is True
    import os

    os.utime(tmp_path / "state.json", (1, 1))  # v1 compared again since (e.g. after `kopt mask`)
    assert latest(tmp_path, ["v0", "v1"])["stop"] is False
