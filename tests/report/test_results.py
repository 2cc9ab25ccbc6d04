"""The results tree read back (kopt.report.results) from a small tree made by the decision fold: what
it decided and on which clock, and the time each class is shown at."""

import pytest

from tests.helpers import _compare, _geo


def test_the_tree_is_what_the_tests_say(res):
    """The fold kept v1 (N=256 decided on the GPU time, N=2048 on the script's median: v0 has no
    GPU time for B1) and discarded v2."""
    assert [v.decision for v in res.versions] == ["baseline", "keep", "discard"]
    basis = {r["class"]: r["basis"] for r in _compare(res, "v1")["per_class"]}
    assert basis == {"N=256": "profiler", "N=2048": "script"}
    assert res.best.name == "v1" and res.best.clock() == "profiler" and res.versions[0].clock() == "script"


def test_the_discarded_version_is_plotted_at_its_compared_time(res):
    v2 = res.versions[2]
    row = next(r for r in v2.compare["per_class"] if r["class"] == "N=256")
    assert v2.class_us("N=256") == (row["candidate_gpu_us"], "profiler")
    assert res.versions[0].class_us("N=2048") == (pytest.approx(400.0), "script")
    assert res.versions[0].class_us("N=256") == (pytest.approx(_geo([90, 180])), "profiler")
