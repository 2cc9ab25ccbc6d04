"""The end of a graph run (the Snakefile's ``onsuccess`` and ``onerror``): one line per version
whose comparison is written, its decision and where to read why, so a run does not end on
Snakemake's step count alone; and the exit status of a run whose versions include no correct
baseline, which has nothing to time anything against."""

from __future__ import annotations

import json
import re
from pathlib import Path

NO_BASELINE_EXIT = 3  # the graph ran, but no version it compared is correct (kopt eval reads it so)


def _number(path: Path) -> int:
    m = re.fullmatch(r"v(\d+)", path.parent.name)
    return int(m.group(1)) if m else -1


def _compared(results: Path) -> list[tuple[str, dict]]:
    out = []
    for path in sorted(results.glob("v*/compare.json"), key=_number):
        try:
            out.append((path.parent.name, json.loads(path.read_text())))
        except (OSError, ValueError):
            continue  # being written, or left broken by a failed job: Snakemake's own lines say which
    return out


def verdict_line(results: Path, v: str, comp: dict) -> str:
    """One version's decision in one line and where to read why."""
    classes = "; ".join(
        f"{c['class']} {c['delta_pct']:+.1f}% {c['verdict']}"
        for c in comp.get("per_class") or []
        if c.get("delta_pct") is not None
    )
    said = classes or " ".join(str(comp.get("detail") or "").split())  # one line: a detail may hold a kernel's text
    if comp.get("evidence"):  # the interpreter's timings: said so on the same line
        said = f"{said} ({str(comp['evidence']).split(';')[0]})"
    broken = comp.get("reason") in ("incorrect", "failed")
    why = results / v / ("correctness.md" if broken else "compare.json")
    return f"kopt: {v}: {comp['decision']} ({comp['reason']})" + (f": {said[:300]}" if said else "") + f"; why: {why}"


def verdict_lines(results: Path) -> list[str]:
    """Each compared version's verdict in one line, then where the whole story is."""
    compared = _compared(results)
    if not compared:
        return []
    report = results / "final_report.md"
    where = f"every version and what to try next: {report}" if report.is_file() else "the loop's state: kopt status"
    return [verdict_line(results, v, comp) for v, comp in compared] + [f"kopt: {where}"]


def no_baseline(results: Path) -> str | None:
    """One line when versions were compared and none of them is correct (no baseline), else None."""
    compared = _compared(results)
    if not compared or any(comp["decision"] == "baseline" for _, comp in compared):
        return None
    v, comp = compared[0]
    return (
        f"kopt: no correct baseline: {v} is {comp['reason']} ({str(comp.get('detail') or '')[:300]}); nothing can "
        f"be timed against it: fix it first ({results / v / 'correctness.md'})"
    )


def end_of_run(results: Path) -> int:
    """Print the verdicts; the run's exit status (NO_BASELINE_EXIT when there is no correct baseline)."""
    for line in verdict_lines(results):
        print(line)
    missing = no_baseline(results)
    if missing:
        print(missing)
        return NO_BASELINE_EXIT
    return 0
