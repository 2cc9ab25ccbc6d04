"""The end of a graph run (kopt.report.verdicts, the Snakefile's onsuccess/onerror): a line per
compared version and where to read why; no correct baseline is a non-zero exit."""

import json

from kopt.report.verdicts import NO_BASELINE_EXIT, end_of_run, no_baseline, verdict_lines


def _compared(results, version, **comp):
    (results / version).mkdir(parents=True)
    (results / version / "compare.json").write_text(json.dumps(comp))


def test_each_compared_version_gets_its_verdict_and_where_to_read_why(tmp_path):
    results = tmp_path / "results"
    _compared(results, "v0", decision="baseline", reason="baseline", detail="first correct version")
    _compared(results, "v10", decision="discard", reason="incorrect", detail="5 of 64 elements are NaN")
    per_class = [{"class": "N=256", "delta_pct": -14.7, "verdict": "improved"}, {"class": "N=2048", "delta_pct": None}]
    _compared(results, "v2", decision="keep", reason="improved", per_class=per_class)
    lines = verdict_lines(results)
    assert lines[0] == f"kopt: v0: baseline (baseline): first correct version; why: {results / 'v0' / 'compare.json'}"
    assert lines[1] == f"kopt: v2: keep (improved): N=256 -14.7% improved; why: {results / 'v2' / 'compare.json'}"
    assert lines[2].startswith("kopt: v10: discard (incorrect): 5 of 64") and lines[2].endswith("correctness.md")
    assert lines[3] == "kopt: the loop's state: kopt status"
    (results / "final_report.md").write_text("")
    assert verdict_lines(results)[-1].endswith(str(results / "final_report.md"))
    assert no_baseline(results) is None and end_of_run(results) == 0
    _compared(results, "v3", decision="discard", reason="tie", per_class=per_class, evidence="cpu-interpreter: not; x")
    assert "N=256 -14.7% improved (cpu-interpreter: not); why:" in verdict_lines(results)[2]
    # a kernel's fault text with a line of its own: one line still, no forged verdict after it
    _compared(results, "v4", decision="discard", reason="failed", detail="boom\nkopt: v4: keep (improved)")
    assert [ln for ln in verdict_lines(results) if ln.startswith("kopt: v4:")] == [
        f"kopt: v4: discard (failed): boom kopt: v4: keep (improved); why: {results / 'v4' / 'correctness.md'}"
    ]


def test_no_correct_baseline_is_one_line_and_a_non_zero_exit(tmp_path, capsys):
    results = tmp_path / "results"
    assert verdict_lines(results) == [] and end_of_run(results) == 0  # nothing compared: nothing said
    _compared(results, "v0", decision="discard", reason="incorrect", detail="16485 of 32768 elements outside")
    assert end_of_run(results) == NO_BASELINE_EXIT != 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("kopt: no correct baseline: v0 is incorrect (16485 of 32768 elements outside)")
