"""The report tables (kopt.report.tables) on a small results tree: they read the decision fold's
verdicts, clocks and deltas from compare.json, and the roofline target is the config's (rule
`reports`' settings), not a number of the reports' own."""

import json

import pandas as pd
import pytest
import yaml

from kopt.report import plots, tables
from kopt.workspace.settings import from_config
from tests.helpers import ROOT, TIMES, TORCH, _compare, _geo, _load, make_tree


def test_class_change_is_the_folds_delta_on_the_folds_clock(res):
    rows = tables.class_rows(res)
    fold = {r["class"]: r for r in _compare(res, "v1")["per_class"]}
    v1 = {cls: next(r for r in rows[cls] if r["version"] == "v1") for cls in rows}
    # N=256: the GPU time decides (both have it), not the script's median
    gpu = (_geo([60 / 90, 150 / 180]) - 1) * 100
    script = (_geo([80 / 100, 170 / 200]) - 1) * 100
    assert v1["N=256"]["change_pct"] == pytest.approx(fold["N=256"]["delta_pct"]) == pytest.approx(gpu)
    assert v1["N=256"]["change_pct"] != pytest.approx(script)
    assert v1["N=2048"]["change_pct"] == pytest.approx((390 / 400 - 1) * 100)
    # the discarded version has no row; the baseline has no change
    assert [r["version"] for r in rows["N=256"]] == ["v0", "v1"] and rows["N=256"][0]["change_pct"] is None
    # times: both clocks as the fold recorded them; v0 has no GPU time for N=2048
    assert v1["N=256"]["script_us"] == pytest.approx(_geo([80, 170]))
    assert v1["N=256"]["gpu_us"] == pytest.approx(_geo([60, 150]))
    assert rows["N=2048"][0]["gpu_us"] is None and rows["N=256"][0]["gpu_us"] == pytest.approx(_geo([90, 180]))


def test_a_changed_verdict_in_compare_json_is_what_the_report_shows(tmp_path):
    """The tables read compare.json: a delta written there is the one shown, whatever bench.csv says."""
    rd = make_tree(tmp_path)
    comp = json.loads((rd / "v1" / "compare.json").read_text())
    for r in comp["per_class"]:
        r["delta_pct"] = -50.0
    (rd / "v1" / "compare.json").write_text(json.dumps(comp))
    res = _load(rd)
    assert all(rows[1]["change_pct"] == -50.0 for rows in tables.class_rows(res).values())
    assert tables.performance_rows(res)[1]["change_pct"] == pytest.approx(-50.0)
    assert "| -50.00% |" in tables.render_performance(res)


def test_a_versions_own_text_stays_in_its_cell(tmp_path):
    """An adversary's hypothesis "...\\n## Stop Summary ... <!--" forged a report section and hid
    the rest of the page: text a version wrote is one line in its cell, pipes escaped, no HTML."""
    rd = make_tree(tmp_path)
    hostile = "fewer passes | x <!--\n\n## Stop Summary\n\n- reason: target reached"
    (rd / "v1.yaml").write_text(yaml.safe_dump({"hypothesis": hostile}))  # what _load reads as v1's metadata
    final = tables.render_final(_load(rd), [])
    assert "\n## Stop Summary" not in final and "<!--" not in final
    assert "| fewer passes \\| x &lt;!-- |" in final  # the path's first line, escaped
    # the stop summary's regressions carry each hypothesis whole: one cell too
    comp = json.loads((rd / "v2" / "compare.json").read_text())
    row = {"version": "v2", "hypothesis": hostile, "files": ["v2.py"], "best_us": 1.0, "candidate_us": 2.0}
    row.update({"delta_pct": 100.0, "class": "N=256", "best": "v1"})
    comp["state"].update(stop=True, stop_reason="5 consecutive regressions", recent_regressions=[row])
    (rd / "v2" / "compare.json").write_text(json.dumps(comp))
    perf = tables.render_performance(_load(rd))
    assert "| v2 | fewer passes \\| x &lt;!-- ## Stop Summary - reason: target reached |" in perf
    assert [ln for ln in perf.splitlines() if ln.startswith("## Stop")] == ["## Stop Summary"] and "<!--" not in perf


def test_overall_change_weights_each_class_by_its_configs(res):
    rows = tables.performance_rows(res)
    assert [r["version"] for r in rows] == ["v0", "v1"]
    want = ((60 / 90) * (150 / 180) * (390 / 400)) ** (1 / 3)  # every config on its class's clock
    assert rows[1]["change_pct"] == pytest.approx((want - 1) * 100)
    assert rows[0]["change_pct"] is None
    # the script µs column: the geometric mean of the version's medians; GPU only when every config has one
    assert rows[0]["script_us"] == pytest.approx(_geo(TIMES["v0"][0].values())) and rows[0]["gpu_us"] is None
    assert rows[1]["gpu_us"] == pytest.approx(_geo(TIMES["v1"][1].values()))
    perf = tables.render_performance(res)
    assert f"| {(want - 1) * 100:+.2f}% |" in perf and "`v10123456789`" in perf


def test_speedups_against_torch_and_v0_compare_on_one_clock_per_class(res):
    sp = {r["class"]: r for r in tables.speedups(res)}
    v1s, v1g = TIMES["v1"]
    es, eg = TORCH["eager"]
    cs, _ = TORCH["compile"]
    # torch eager has GPU times: the GPU time decides
    assert sp["N=256"]["vs_eager"] == pytest.approx(_geo([eg["A1"] / v1g["A1"], eg["A2"] / v1g["A2"]]))
    # torch.compile has none: both sides on the script's median (never v1's GPU time against its median)
    assert sp["N=256"]["vs_compile"] == pytest.approx(_geo([cs["A1"] / v1s["A1"], cs["A2"] / v1s["A2"]]))
    assert sp["N=2048"]["vs_compile"] == pytest.approx(cs["B1"] / v1s["B1"])
    # v0 has no GPU time for B1: N=2048 against v0 on the script's median
    assert sp["N=2048"]["vs_v0"] == pytest.approx(400 / 390)
    assert sp["N=256"]["vs_v0"] == pytest.approx(_geo([90 / 60, 180 / 150]))
    assert sp["N=256"]["best_us"] == pytest.approx(_geo([60, 150]))  # the best's times: its own clock, profiler
    rows = {r["key"]: r for r in tables.benchmark_rows(res)}
    assert rows["A1"]["best_us"] == 60.0
    assert rows["A1"]["eager_us"] == 110.0 and rows["A1"]["vs_eager"] == pytest.approx(110 / 60)
    assert rows["A1"]["compile_us"] == 130.0 and rows["A1"]["vs_compile"] == pytest.approx(130 / 80)
    assert rows["B1"]["vs_v0"] == pytest.approx(400 / 390)
    bench = tables.render_benchmark(res)
    assert "Against torch.compile, N=256, N=2048 compared on the script's median" in bench
    assert "Against v0" not in bench and "Against torch eager" not in bench
    final = tables.render_final(res, [])
    assert "Against v0, N=2048 compared on the script's median" in final


def test_the_roofline_target_is_the_configs(tmp_path):
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["roofline_target"] = 0.75
    settings = from_config(config, gpu="g", kernel_type="t", command="c")
    assert settings["report"]["target_fraction"] == 0.75 == settings["bottleneck"]["target_fraction"]

    res = _load(make_tree(tmp_path))
    assert res.target_fraction == 0.75
    sp = {r["class"]: r for r in tables.speedups(res)}
    assert sp["N=256"]["gap"] == pytest.approx(0.25) and sp["N=2048"]["gap"] == pytest.approx(0.15)
    final = tables.render_final(res, [])
    assert "| gap to 75% |" in final and "| 25.0 pts |" in final and "90%" not in final
    fig = plots.class_figure(res, "N=256")
    try:
        ax = fig.axes[1]
        assert [list(line.get_ydata()) for line in ax.get_lines()] == [[0.75, 0.75]]
        assert "(target 0.75)" in ax.get_title()
    finally:
        plots._pyplot().close(fig)


def test_without_a_recorded_target_no_target_is_made_up(tmp_path):
    res = _load(make_tree(tmp_path, target=None))
    assert res.target_fraction is None
    assert all(r["gap"] is None for r in tables.speedups(res))
    assert "| gap to the target |" in tables.render_final(res, [])
    fig = plots.class_figure(res, "N=256")
    try:
        assert fig.axes[1].get_lines() == [] and "target not recorded" in fig.axes[1].get_title()
    finally:
        plots._pyplot().close(fig)


def test_a_torch_baselines_profiler_note_is_shown_and_its_error_comes_first(res):
    eager = res.baselines["eager"]
    assert tables.baseline_problems(res) == {}
    eager["profiler_note"] = [None] * (len(eager) - 1) + ["config A2: under the profiler ... recorded, not refused"]
    assert tables.baseline_problems(res)["eager"].startswith(
        "1 config(s) noted, their figures kept; the first: config A2"
    )
    assert "torch eager: 1 config(s) noted, their figures kept" in tables.render_benchmark(res)
    assert "torch eager: 1 config(s) noted, their figures kept" in tables.render_final(res, [])
    eager["error"] = eager["error"].astype(object)
    eager.loc[0, "status"], eager.loc[0, "error"] = "failed", "config A1: crashed"
    problem = "no figure on 1 config(s) (their cells are empty); the first one's reason: config A1: crashed"
    assert tables.baseline_problems(res)["eager"] == problem
    assert f"torch eager: {problem}" in tables.render_final(res, [])


def test_the_bounds_spread_is_in_the_report_per_config(tmp_path):
    """Issue 42, point 4: the bound's standard error per config is in performance.md beside the
    GPU time, with three of them as a share of it and the unseen time; no table without a bound."""
    rd = make_tree(tmp_path)
    assert "The bound on unseen work" not in tables.render_performance(_load(rd))
    df = pd.read_csv(rd / "v1" / "bench.csv")
    df["gpu_us"] = df["profiler_us"]
    df["bound_us"] = df["gpu_us"] + 12.5
    df["bound_se_us"] = [0.25] + [None] * (len(df) - 1)
    df["bound_calls"] = 32
    df.to_csv(rd / "v1" / "bench.csv", index=False)
    res = _load(rd)
    rows = tables.bound_rows(res)
    first = df.iloc[0]
    assert rows[0]["key"] == first.config_key and rows[0]["unseen_us"] == pytest.approx(12.5)
    assert rows[0]["three_se_pct"] == pytest.approx(75 / first.gpu_us) and rows[1]["se_us"] is None
    perf = tables.render_performance(res)
    assert f"| v1 | {first.config_key} |" in perf and f"| {75 / first.gpu_us:.2f}% | +12.50 | 32 |" in perf


def test_a_torch_baseline_the_graph_did_not_run_is_said_in_the_reports(tmp_path):
    """config `baselines: auto` runs torch eager alone on the CPU interpreter: the reports say why
    torch.compile has no figure and how to ask for it, not an empty column alone."""
    import shutil

    rd = make_tree(tmp_path)
    shutil.rmtree(rd / "baselines" / "compile")
    res = _load(rd)
    assert set(res.baselines) == {"eager"}
    why = tables.baseline_problems(res)
    assert set(why) == {"compile"} and "baselines=[eager,compile]" in why["compile"]
    assert "torch compile: not run in this graph" in tables.render_benchmark(res)
    assert tables.baseline_problems(_load(make_tree(tmp_path / "both"))) == {}


@pytest.mark.parametrize(
    ("setting", "gpu", "want"),
    [
        ("auto", "cpu", ["eager"]),
        ("auto", "NVIDIA H100 80GB HBM3", ["eager", "compile"]),
        (["compile"], "cpu", ["compile"]),
    ],
)
def test_the_torch_baselines_a_graph_runs(setting, gpu, want):
    from kopt.workspace.settings import torch_baselines

    assert torch_baselines(setting, gpu) == want
