"""The reports (kopt.report) on a small results tree built here: the tables read the decision
fold's verdicts, clocks and deltas from compare.json, the figures are drawn, and the roofline target
is the config's (rule `reports`' settings), not a number of the reports' own."""

from __future__ import annotations

import ast
import json
import math
from pathlib import Path

import pandas as pd
import pytest
import yaml

from kopt.loop import decide
from kopt.report import plots, tables
from kopt.report.results import load
from kopt.workspace.settings import from_config

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "kopt" / "report"
NAN = math.nan
CLASS = {"A1": "N=256", "A2": "N=256", "B1": "N=2048"}
# per version: (script medians, profiler GPU times); v0's profiler gave nothing for B1, so the fold
# decides N=2048 on the script's median against v0 and N=256 on the GPU time
TIMES = {
    "v0": ({"A1": 100.0, "A2": 200.0, "B1": 400.0}, {"A1": 90.0, "A2": 180.0, "B1": NAN}),
    "v1": ({"A1": 80.0, "A2": 170.0, "B1": 390.0}, {"A1": 60.0, "A2": 150.0, "B1": 370.0}),
    "v2": ({"A1": 85.0, "A2": 175.0, "B1": 395.0}, {"A1": 70.0, "A2": 160.0, "B1": 380.0}),
}
# torch eager has GPU times, torch.compile none (its profiler failed, say)
TORCH = {
    "eager": ({"A1": 120.0, "A2": 240.0, "B1": 500.0}, {"A1": 110.0, "A2": 220.0, "B1": 480.0}),
    "compile": ({"A1": 130.0, "A2": 230.0, "B1": 450.0}, {"A1": NAN, "A2": NAN, "B1": NAN}),
}
FRACTION = {"N=256": 0.5, "N=2048": 0.6}


def _bench(script: dict, gpu: dict) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "config_key": list(script),
            "config_class": [CLASS[k] for k in script],
            "status": "ok",
            "median_us": list(script.values()),
            "profiler_us": [gpu[k] for k in script],
            "device": "Test GPU",
            "method": "cuda-events",
            "error": None,
        }
    )


def _bottleneck() -> dict:
    return {
        "status": "ok",
        "classes": [
            {
                "class": c,
                "bottleneck": "memory-bound",
                "roofline_fraction_min": f,
                "roofline": [{"arithmetic_intensity": 0.25, "achieved_tflops": f, "peak_tflops": 60.0}],
                "next_directions": [{"idea": "more bytes in flight"}],
            }
            for c, f in FRACTION.items()
        ],
    }


def make_tree(root: Path, target: float | None = 0.75) -> Path:
    """results/ as the graph leaves it, for what the reports read: compare.json made by the fold."""
    rd = root / "results"
    state = decide.initial_state()
    for v, (script, gpu) in TIMES.items():
        (rd / v).mkdir(parents=True)
        df = _bench(script, gpu)
        df.to_csv(rd / v / "bench.csv", index=False)
        cand = decide.Candidate(
            v, "ok", medians=dict(script), class_of=CLASS, gpu_us={k: t for k, t in gpu.items() if t == t}
        )
        comp, state = decide.decide(state, cand, decide.Params(noise_pct=1.0))
        comp.update(
            device="Test GPU",
            method="cuda-events",
            target_classes="all",
            provenance={"created": "2026-01-02T03:04:05+00:00", "kernel_sha256": f"{v}0123456789abcdef"},
        )
        (rd / v / "compare.json").write_text(json.dumps(comp))
        (rd / v / "bottleneck.json").write_text(json.dumps(_bottleneck()))
    for impl, (script, gpu) in TORCH.items():
        (rd / "baselines" / impl).mkdir(parents=True)
        _bench(script, gpu).to_csv(rd / "baselines" / impl / "bench.csv", index=False)
    (rd / "env_check.json").write_text(json.dumps({"gpu": "Test GPU"}))
    (rd / "hardware").mkdir()
    (rd / "hardware" / "test.json").write_text(json.dumps({"gpu": "Test GPU", "ceilings": {"memory_gbps": 3000.0}}))
    (rd / "settings").mkdir()
    report = {"command": "snakemake --cores 1 {target}", "kernel_type": "t"}
    if target is not None:
        report["target_fraction"] = target
    (rd / "settings" / "report.json").write_text(json.dumps(report))
    return rd


def _load(rd: Path):
    vs = list(TIMES)
    metas = [str(rd / f"{v}.yaml") for v in vs]
    return load(rd, vs, metas, [f"{v}.py" for v in vs], hardware=rd / "hardware" / "test.json")


@pytest.fixture
def res(tmp_path):
    return _load(make_tree(tmp_path))


def _compare(rd_or_res, v: str) -> dict:
    return next(x for x in rd_or_res.versions if x.name == v).compare


def _geo(xs) -> float:
    return decide.geomean(list(xs))


def test_the_tree_is_what_the_tests_say(res):
    """The fold kept v1 (N=256 decided on the GPU time, N=2048 on the script's median: v0 has no
    GPU time for B1) and discarded v2."""
    assert [v.decision for v in res.versions] == ["baseline", "keep", "discard"]
    basis = {r["class"]: r["basis"] for r in _compare(res, "v1")["per_class"]}
    assert basis == {"N=256": "profiler", "N=2048": "script"}
    assert res.best.name == "v1" and res.best.clock() == "profiler" and res.versions[0].clock() == "script"


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


def test_the_discarded_version_is_plotted_at_its_compared_time(res):
    v2 = res.versions[2]
    row = next(r for r in v2.compare["per_class"] if r["class"] == "N=256")
    assert v2.class_us("N=256") == (row["candidate_gpu_us"], "profiler")
    assert res.versions[0].class_us("N=2048") == (pytest.approx(400.0), "script")
    assert res.versions[0].class_us("N=256") == (pytest.approx(_geo([90, 180])), "profiler")


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


def test_plots_write_every_figure(res, tmp_path):
    out = tmp_path / "plots"
    files = plots.plots(res, out)
    assert files == ["roofline.png", "class_N_256.png", "class_N_2048.png", "speedup.png"]
    for f in files:
        assert (out / f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    final = tables.render_final(res, files)
    assert all(f"![{f}](plots/{f})" in final for f in files)


def _functions(path: Path):
    tree = ast.parse(path.read_text())
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_no_report_function_is_long():
    long = [
        f"{p.name}:{f.name} ({f.end_lineno - f.lineno + 1} lines)"
        for p in REPORT.glob("*.py")
        for f in _functions(p)
        if f.end_lineno - f.lineno + 1 > 60
    ]
    assert not long, long


def test_the_reports_hold_no_target_of_their_own():
    consts = [
        f"{p.name}:{n.lineno}"
        for p in REPORT.glob("*.py")
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, ast.Constant) and isinstance(n.value, float) and n.value == 0.9
    ]
    assert not consts, consts
    assert not [p.name for p in (REPORT / "templates").glob("*.j2") if "90%" in p.read_text()]
