"""The loop state as a reader sees it (results/state.json, `kopt status`), built in one place from
a comparison: the decision fold's state after that version, without the per-class detail."""

from __future__ import annotations

import json
from pathlib import Path


def summary(comp: dict) -> dict:
    """The state after ``comp``'s version: best, counters, repairs, masks, stop and its reason."""
    st = comp["state"]
    return {
        "after": comp["version"],
        "best": (st.get("best") or {}).get("version"),
        "consecutive_regressions": st.get("consecutive_regressions", 0),
        "repairs": st.get("repairs", {}),
        "abandoned": st.get("abandoned", []),
        "masked": st.get("masked", []),
        "stop": st.get("stop", False),
        "stop_reason": st.get("stop_reason"),
        "recent_regressions": st.get("recent_regressions", []),
    }


def latest(results: str | Path, versions: list[str]) -> dict | None:
    """The state after the last of ``versions`` that has a comparison in ``results``: state.json
    when it was written after that same comparison (same version, not older), else built from the
    comparison; None if none."""
    for v in reversed(versions):
        p = Path(results) / v / "compare.json"
        if p.is_file():
            saved = Path(results) / "state.json"
            fresh = saved.is_file() and saved.stat().st_mtime >= p.stat().st_mtime
            doc = json.loads(saved.read_text()) if fresh else {}
            return doc if doc.get("after") == v else summary(json.loads(p.read_text()))
    return None
