"""The whole graph, end to end on the CPU (Triton interpreter), on a temporary copy of the project."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from kopt.loop.state import describe_next
from tests.helpers import ROOT, _tree, artifacts, copy_project, copy_tree, snakemake

pytestmark = pytest.mark.e2e


# v4 is incorrect on purpose, v5 its repair, v6 a split; v7 (CUDA) needs a GPU: skipped on the CPU
VERSIONS = [f"v{i}" for i in range(7)]


CORRECT = [v for v in VERSIONS if v != "v4"]


@pytest.fixture(scope="module")
def project(tmp_path_factory, softmax_graph) -> Path:
    """A copy of the workflow and the example with the graph built to the default target (every
    version's compare.json, env_check.md and the reports): this test run's shared build
    (tests/conftest.py), copied, as these tests change it."""
    return copy_tree(softmax_graph("all"), tmp_path_factory.mktemp("project"))


def test_every_version_has_its_records(project):
    v4 = json.loads((project / "results" / "v4" / "correctness.json").read_text())
    assert v4["status"] == "incorrect" and "NaN" in v4["error"]
    for v in CORRECT:
        for f in ("correctness.md", "correctness.json", "bench.csv", "bench_samples.csv", "bench.json", "compare.json"):
            assert (project / "results" / v / f).is_file(), f"{v}/{f}"
        for f in ("measure", "profile", "compare"):
            assert (project / "results" / "logs" / v / f"{f}.log").is_file()
        corr = json.loads((project / "results" / v / "correctness.json").read_text())
        assert corr["status"] == "pass" and corr["device"] == "cpu"
        assert all(len(c["seeds"]) >= 3 for c in corr["configs"])
        df = pd.read_csv(project / "results" / v / "bench.csv")
        assert list(df.columns[:3]) == ["M", "N", "dtype"]
        assert {
            "config_class",
            "median_us",
            "p20_us",
            "p80_us",
            "n_samples",
            "gbps",
            "tflops",
            "device",
            "method",
        } <= set(df.columns)
        assert set(df["method"]) == {"cpu-interpreter"} and (df["median_us"] > 0).all()
        assert set(df["config_class"]) == {"N=256", "N=2048", "N=16384"}


def test_every_result_file_matches_its_record(project):
    from kopt.workspace.records import CSV_FILES, FILES, validate_tree

    results = project / "results"
    assert validate_tree(results) == []
    covered = {f for pattern in [*FILES, *CSV_FILES] for f in results.glob(pattern)}
    written = {f for f in results.rglob("*") if f.suffix in (".json", ".csv")}
    free = {f for f in written if "settings" in f.parts or "raw" in f.parts}  # config excerpts; profiler output
    assert written - free == covered, sorted(map(str, written - free - covered))


def test_a_record_refuses_a_drifted_file(project, tmp_path):
    from kopt.workspace.records import validate_tree

    copy = tmp_path / "results"
    shutil.copytree(project / "results" / "v1", copy / "v1")
    comp = json.loads((copy / "v1" / "compare.json").read_text())
    comp["verdict"] = comp.pop("decision")  # a writer that renamed a key
    (copy / "v1" / "compare.json").write_text(json.dumps(comp))
    df = pd.read_csv(copy / "v1" / "bench.csv")
    df.loc[0, "status"] = "great"
    df.to_csv(copy / "v1" / "bench.csv", index=False)
    problems = validate_tree(copy)
    assert any("compare.json: decision: Field required" in p for p in problems), problems
    assert any("bench.csv row 1: status" in p for p in problems), problems


def test_compare_is_a_fold_over_the_chain(project):
    comps = [json.loads((project / "results" / v / "compare.json").read_text()) for v in VERSIONS]
    assert comps[0]["decision"] == "baseline" and comps[0]["best_after"] == "v0"
    for prev, cur in zip(comps, comps[1:], strict=False):
        assert cur["best_before"] == prev["best_after"]
        assert cur["decision"] in {"keep", "discard", "split-recommended"}
    v4, v5, v6 = comps[4], comps[5], comps[6]
    assert v4["decision"] == "discard" and v4["reason"] == "incorrect"
    # a passing repair is compared like any candidate (CPU-interpreter noise decides which way)
    assert v5["repair_of"] == "v4" and v5["reason"] not in {"incorrect", "failed", "repair-limit"}
    assert v5["decision"] in {"keep", "discard", "split-recommended"} and v5["per_class"]
    # the split routes N=256 to v3 and the rest to v1, and is decided like a candidate aimed at N=256
    assert v6["dispatch"]["routes"]["M=20,N=256,dtype=float32"] == "v3"
    assert v6["dispatch"]["routes"]["M=8,N=2048,dtype=float32"] == "v1"
    routed_away = sorted({k.split(",")[1] for k, use in v6["dispatch"]["routes"].items() if use != v6["best_before"]})
    assert v6["dispatch"]["new_kernel_classes"] == routed_away  # it targets what it sends to another kernel
    assert v6["decision"] in {"keep", "discard"}
    v7 = json.loads((project / "results" / "v7" / "compare.json").read_text())  # CUDA, on a machine without a GPU
    assert (v7["decision"], v7["reason"]) == ("skipped", "needs-gpu") and "needs a CUDA GPU" in v7["detail"]
    assert v7["best_before"] == v7["best_after"] == v6["best_after"] and v7["state"] == v6["state"]
    assert v7["experience"] == {"skipped": v7["detail"]}
    state = json.loads((project / "results" / "state.json").read_text())
    assert state["after"] == "v7" and state["best"] == v6["best_after"]
    for cur in comps[1:]:
        if cur["version"] != "v4":
            assert len(cur["per_class"]) == 3 and len(cur["per_config"]) == 3
        assert cur["best_after"] == (cur["version"] if cur["decision"] == "keep" else cur["best_before"])
        assert cur["method"] == "cpu-interpreter"
        assert len(cur["provenance"]["kernel_sha256"]) == 64
        if cur["version"] != "v4":  # decided on CPU timings: labelled, no counter moved, nothing learned
            assert cur["evidence"].startswith("cpu-interpreter: timings are not evidence")
            assert cur["state"]["consecutive_regressions"] == 0 and not cur["state"]["recent_regressions"]
            assert "skipped" in cur["experience"]
    assert not state["stop"]


def test_cpu_runs_add_no_outcome_to_the_experience_store(project):
    from kopt.loop.experience import Store

    # the project's store is rule `experience`'s output; nothing is written to a user-wide one
    assert not (project / "xdg").exists()
    with Store(project / "results" / "experience.sqlite") as st:
        rows = st.list()
    # correctness counts everywhere (v4 is incorrect); nothing decided on CPU timings is learned
    assert [(r["outcome"], r["reason"]) for r in rows] == [("discard", "incorrect")], rows
    perf = (project / "results" / "performance.md").read_text()
    assert "## What worked before" in perf and "(latency-bound): split-dispatch" in perf


def test_a_dry_run_with_other_settings_changes_no_file(project):
    """Settings are written by rule `settings`, not while the Snakefile is parsed."""
    before = _tree(project / "results")
    for extra in ((), ("--rerun-triggers", "mtime")):
        p = snakemake(project, "-n", "results/v3/compare.json", *extra, config=["noise_pct=7"])
        out = p.stdout + p.stderr
        assert p.returncode == 0, out
        assert "kopt: results/settings/decide.json holds other settings than this run's: it will be rebuilt" in out
        assert re.search(r"^settings +1$", p.stdout, re.M) and re.search(r"^compare +4$", p.stdout, re.M), out
    assert _tree(project / "results") == before


def test_a_stale_routed_kernel_or_a_target_short_of_compare_is_not_kept(project):
    """v6 routes configs to v1: v1.py changed under its old time makes v6's results stale too;
    a target short of compare (bench.json) checks the results in its own graph."""
    k = project / "examples" / "softmax" / "kernels" / "v1.py"
    text, st = k.read_text(), k.stat()
    before = _tree(project / "results")
    try:
        k.write_text(text + "\n# changed, then given its old time back\n")
        os.utime(k, ns=(st.st_atime_ns, st.st_mtime_ns))
        for target, stale in (
            ("results/v6/correctness.json", "results/v6/correctness.json"),
            ("results/v1/bench.json", "results/v1/correctness.json"),
        ):
            p = snakemake(project, "-n", target, "--rerun-triggers", "mtime")
            out = p.stdout + p.stderr
            assert p.returncode == 0, out
            assert f"kopt: {stale} was made from another examples/softmax/kernels/v1.py (sha256 " in out, out
            assert re.search(r"^measure +1$", p.stdout, re.M), out
    finally:
        k.write_text(text)
        os.utime(k, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert _tree(project / "results") == before  # dry runs
    p = snakemake(project, "results/v6/compare.json")
    assert "Nothing to be done" in p.stdout + p.stderr


def test_a_changed_setting_reruns_what_reads_it_and_is_recorded(project, tmp_path):
    """Without .snakemake's records of earlier runs and with --rerun-triggers mtime too. On a copy
    of the project (the other tests read its settings as built; rebuilding them back took a run)."""
    project = copy_tree(project, tmp_path / "copy")
    corr = (project / "results" / "v1" / "correctness.json").read_bytes()
    shutil.rmtree(project / ".snakemake" / "metadata")
    p = snakemake(project, "results/v1/compare.json", "--rerun-triggers", "mtime", config=["noise_pct=7"])
    assert p.returncode == 0, p.stdout + p.stderr
    comp = json.loads((project / "results" / "v1" / "compare.json").read_text())
    assert comp["provenance"]["settings"]["noise_pct"] == 7
    assert (project / "results" / "v1" / "correctness.json").read_bytes() == corr  # does not read it


def test_second_run_does_nothing(project):
    p = snakemake(project, "results/v3/compare.json")
    assert p.returncode == 0 and "Nothing to be done" in p.stdout + p.stderr


def test_a_broken_new_version_costs_no_earlier_result(project):
    before = {p: p.read_bytes() for p in (project / "results").glob("v[0-7]/**/*") if p.is_file()}
    kernels = project / "examples" / "softmax" / "kernels"
    (kernels / "v8.py").write_text("def run_kernel(x, y):\n    raise ValueError('v8 is broken')\n")
    (kernels / "v8.yaml").write_text("parent: v1\nhypothesis: broken on purpose\nrationale: a test\nexpected: failed\n")
    try:
        p = snakemake(project, "results/v8/compare.json")
        assert p.returncode == 0, p.stdout + p.stderr
        comp = json.loads((project / "results" / "v8" / "compare.json").read_text())
        assert comp["decision"] == "discard" and comp["reason"] == "failed"
        assert "ValueError: v8 is broken" in comp["detail"]
        after = {p: p.read_bytes() for p in (project / "results").glob("v[0-7]/**/*") if p.is_file()}
        assert after == before
    finally:
        (kernels / "v8.py").unlink()
        (kernels / "v8.yaml").unlink()


def test_malformed_target_stops_before_any_run(project):
    target = project / "examples" / "softmax" / "target.yaml"
    good = target.read_text()
    target.write_text(good.replace("seeds: 3", "seeds: two"))
    try:
        p = snakemake(project, "-n")
        assert p.returncode != 0
        line = "kopt: examples/softmax/target.yaml: seeds: 'two' is not of type 'integer'"
        assert line in p.stdout + p.stderr
    finally:
        target.write_text(good)


def test_malformed_config_names_the_field(project):
    p = snakemake(project, "-n", config=["noise_pct=-1"])
    assert p.returncode != 0
    assert "noise_pct" in p.stdout + p.stderr


def test_profiles_and_bottlenecks_are_labelled_cpu(project):
    VERSIONS = CORRECT  # noqa: N806 - v4 is not profiled (incorrect)
    hwj = json.loads((project / "results" / "hardware" / "cpu.json").read_text())
    assert (
        hwj["gpu"] == "cpu" and hwj["ceilings"]["memory_gbps"] > 0 and hwj["ceilings"]["basis"]["memory"] == "measured"
    )
    for v in VERSIONS:
        prof = json.loads((project / "results" / v / "profile" / "profile.json").read_text())
        assert prof["status"] == "ok" and prof["backend"] == "cpu-interpreter"
        assert {c["class"] for c in prof["classes"]} == {"N=256", "N=2048", "N=16384"}
        assert all("not GPU performance" in c["note"] for c in prof["classes"])
        bneck = json.loads((project / "results" / v / "bottleneck.json").read_text())
        for c in bneck["classes"]:
            assert c["evidence"] == "roofline-only" and c["next_directions"]
            assert all(p["time_basis"] == "script" for p in c["roofline"])
        comp = json.loads((project / "results" / v / "compare.json").read_text())
        assert "roofline" not in comp  # the decision reads no profile: bottleneck.json has it
        assert all(r["basis"] == "script" for r in comp["per_class"])


def _fmt(x):
    from kopt.report.render import fmt

    return fmt(x)


def test_reports_hold_baseline_and_kept_rows_only(project):
    from kopt.loop.decide import geomean

    res = project / "results"
    perf = (res / "performance.md").read_text()
    table = perf.split("## Per config class")[0]
    rows = [ln for ln in table.splitlines() if ln.startswith("| 20")]
    comps = {v: json.loads((res / v / "compare.json").read_text()) for v in VERSIONS}
    kept = [v for v in VERSIONS if comps[v]["decision"] in ("baseline", "keep")]
    assert [r.split("|")[2].strip() for r in rows] == kept
    for r in rows:
        v = r.split("|")[2].strip()
        df = pd.read_csv(res / v / "bench.csv")
        # the script µs column is the geometric mean of the version's medians in bench.csv
        assert f"| {_fmt(geomean(df['median_us']))} |" in r
        assert comps[v]["provenance"]["kernel_sha256"][:12] in r
    for v in VERSIONS:
        if v not in kept:
            assert not any(f"| {v} |" in ln for ln in table.splitlines())
    assert "cpu-interpreter" in perf


def test_final_report_and_benchmark(project):
    res = project / "results"
    final = (res / "final_report.md").read_text()
    for v in VERSIONS:
        assert f"| {v} |" in final.split("## The path")[1].split("## Speedup")[0]
    assert "plots/roofline.png" in final and "not GPU performance" in final
    nxt = json.loads((res / "state.json").read_text())["next"]
    assert f"**Next step** (`kopt status`): {describe_next(nxt)}" in final
    bench = (res / "benchmark.md").read_text()
    eager = pd.read_csv(res / "baselines" / "eager" / "bench.csv")
    assert (eager["status"] == "ok").all()
    for r in eager.itertuples():
        assert f"| {r.config_key} |" in bench and f"| {_fmt(float(r.median_us))} |" in bench
    for png in ("roofline.png", "speedup.png", "class_N_256.png"):
        assert (res / "plots" / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    env = (res / "env_check.md").read_text()
    assert "| device | cpu" in env and "| torch |" in env and "| Snakemake |" in env


def test_html_report(project):
    p = subprocess.run(
        [sys.executable, "-m", "snakemake", "--report", "report.html", "--config", "device=cpu"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stdout + p.stderr
    html = (project / "report.html").read_text(errors="replace")
    assert "performance.md" in html and "roofline.png" in html
    sys.path.insert(0, str(ROOT / "tools"))
    from page_check import check_pages

    found = check_pages([project / "report.html"], artifacts("report"))  # headless Chromium, a screenshot kept
    assert not any(found.values()), found


@pytest.mark.parametrize(
    "old, new, says",
    [
        ("def reference(x):", "def reference_(x):", "ref.py: defines no reference() function"),
        (
            "    return torch.softmax(x, dim=-1)",
            "    assert x.shape[1] != 2048, 'no long rows'\n    return torch.softmax(x, dim=-1)",
            "reference() failed: AssertionError: no long rows (config M=8,N=2048,dtype=float32)",
        ),
        ("    torch.manual_seed(seed)", "    torch.manual_seed(seed)\n    assert N != 256, 'bad N'", "setup(seed="),
    ],
)
def test_a_broken_reference_stops_before_any_version(tmp_path, old, new, says):
    """Issue 10: one line naming ref.py, the function and the config; no version is judged."""
    dst = copy_project(tmp_path)
    ref = dst / "examples" / "softmax" / "ref.py"
    assert old in ref.read_text()
    ref.write_text(ref.read_text().replace(old, new))
    p = snakemake(dst, "results/v3/compare.json")
    out = p.stdout + p.stderr
    assert p.returncode != 0
    line = next((ln for ln in out.splitlines() if ln.startswith("kopt: ") and "ref.py" in ln), None)
    assert line and says in line and line.endswith("no version was run"), out[-3000:]
    assert not list((dst / "results").glob("v*/correctness.json"))
    assert not (dst / "experience.sqlite").exists()
