"""kopt.workspace.records: the child request is refused before a child starts when it does not
match its record; the tree validation itself runs on a whole graph in tests/graph/test_e2e.py."""

import pytest
from pydantic import ValidationError

from kopt.workspace.records import BENCH_COLUMNS, checked_request, config_columns

REQUEST = {
    "ref": "ref.py",
    "kernel": "kernels/v0.py",
    "device": "auto",
    "seeds": 3,
    "configs_by_device": {"cpu": [{"config": {"N": 8}, "key": "N=8", "class": "N=8"}], "cuda": []},
    "opts": {},
    "inputs": {},
}


def test_a_request_that_matches_passes_unchanged():
    assert checked_request("bench", REQUEST) is REQUEST
    assert checked_request("hardware", {"device": "cuda", "runs": 10})


def test_a_request_with_a_missing_or_unknown_field_is_refused():
    with pytest.raises(ValidationError, match="seeds"):
        checked_request("bench", {k: v for k, v in REQUEST.items() if k != "seeds"})
    with pytest.raises(ValidationError, match="extra"):
        checked_request("profile", {**REQUEST, "calss": 1})


def test_bench_columns_come_from_the_record():
    import pandas as pd

    df = pd.DataFrame(columns=["M", "N", *BENCH_COLUMNS])
    assert config_columns(df) == ["M", "N"] and "ci_pct" in BENCH_COLUMNS


def test_the_gpu_time_that_decides_is_nsight_computes_where_every_config_has_it():
    import pandas as pd

    from kopt.workspace.records import gpu_column, gpu_times

    both = pd.DataFrame(
        {"config_key": ["a", "b"], "gpu_us": [2.0, 4.0], "profiler_us": [2.1, 4.2], "bound_us": [300.0, 310.0]}
    )
    assert gpu_column(both) == "gpu_us"
    got = gpu_times(both)
    assert (got["gpu_us"], got["clock"], got["gpu_se"]) == ({"a": 2.0, "b": 4.0}, "ncu", {})
    assert got["bound"]["bound_us"] == {"a": 300.0, "b": 310.0} and got["bound"]["bound_se_us"] == {}
    # Nsight Compute's standard errors go with its times, where its calls gave one
    assert gpu_times(both.assign(gpu_se_us=[0.01, None]))["gpu_se"] == {"a": 0.01}
    one_missing = both.assign(gpu_us=[2.0, None])  # a config Nsight Compute did not time: in-process
    assert gpu_column(one_missing) == "profiler_us" and gpu_times(one_missing)["clock"] == "in-process"
    cpu = both.assign(gpu_us=None, profiler_us=None, clock="judge")
    assert gpu_column(cpu) is None and gpu_times(cpu)["gpu_us"] == {} and gpu_times(cpu)["clock"] == "judge"
