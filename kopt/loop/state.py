"""The loop state as a reader sees it (results/state.json, `kopt status [--json]`, `kopt eval`),
built in one place: the decision fold's state after the last comparison, the best version's
figures and roofline gap per class, and the next action as data."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from kopt.loop.decide import MAX_REPAIRS, geomean
from kopt.workspace.records import gpu_column


def summary(comp: dict, results: str | Path | None = None) -> dict:
    """The state after ``comp``'s version: best, counters, repairs, masks, stop and its reason
    (with ``results``, the stop at the roofline target too: ``target_stop``)."""
    st = target_stop(results, comp["state"]) if results is not None else comp["state"]
    return {
        "after": comp["version"],
        "best": (st.get("best") or {}).get("version"),
        "consecutive_regressions": st.get("consecutive_regressions", 0),
        "repairs": st.get("repairs", {}),
        "abandoned": st.get("abandoned", []),
        "broken": st.get("broken", []),
        "masked": st.get("masked", []),
        "stop": st.get("stop", False),
        "stop_reason": st.get("stop_reason"),
        "recent_regressions": st.get("recent_regressions", []),
    }


def target_stop(results: str | Path, st: dict) -> dict:
    """The fold's state ``st``, stopped where its best version is at the roofline target on every
    class: its bottleneck.json says so (rule `bottleneck`, after the profile, which follows
    compare.json: until it exists the stop waits for it), on timings that are evidence (not the
    CPU's: a bench method "cpu-...")."""
    best = (st.get("best") or {}).get("version")
    if st.get("stop") or best is None:
        return st
    bottleneck, bench = Path(results) / best / "bottleneck.json", Path(results) / best / "bench.csv"
    if not (bottleneck.is_file() and bench.is_file()):
        return st
    doc = json.loads(bottleneck.read_text())
    if doc.get("status") != "ok" or not doc.get("target_reached_all"):
        return st
    if pd.read_csv(bench, usecols=["method"])["method"].astype(str).str.startswith("cpu-").any():
        return st
    if json.loads((Path(results) / best / "compare.json").read_text()).get("untrusted"):
        return st  # a keep the judge did not measure itself stops nothing
    return {**st, "stop": True, "stop_reason": f"target reached: {best} is at the roofline target on every class"}


def last_compare(results: str | Path, versions: list[str]) -> dict | None:
    """The comparison of the last of ``versions`` that has one in ``results``."""
    for v in reversed(versions):
        p = Path(results) / v / "compare.json"
        if p.is_file():
            return json.loads(p.read_text())
    return None


def best_classes(results: str | Path, best: str | None) -> dict:
    """Per config class of the best version: its time (geomean over the class's configs, on the
    GPU time that decides where every config has it), roofline fraction, gap to the target,
    bottleneck and top two directions with their evidence."""
    if best is None:
        return {}
    bench, bottleneck = Path(results) / best / "bench.csv", Path(results) / best / "bottleneck.json"
    out: dict[str, dict] = {}
    if bench.is_file():
        df = pd.read_csv(bench)
        for cls, rows in df[df["status"] == "ok"].groupby("config_class", sort=False):
            col = gpu_column(rows) or "median_us"
            out[cls] = {"time_us": round(geomean(rows[col]), 3), "clock": col}
    if bottleneck.is_file():
        doc = json.loads(bottleneck.read_text())
        for c in doc.get("classes", []):
            frac = c.get("roofline_fraction_min")
            out.setdefault(c["class"], {}).update(
                roofline_fraction=frac,
                gap=None if frac is None else round(max(doc["target_fraction"] - frac, 0.0), 4),
                bottleneck=c.get("bottleneck"),
                directions=[
                    {k: d.get(k) for k in ("id", "idea", "evidence")} for d in c.get("next_directions", [])[:2]
                ],
            )
    return out


def next_action(
    st: dict | None, comp: dict | None, missing: list[str], drafts: list[str], can_split: bool = True
) -> dict:
    """What to do next, as data: stop, evaluate, finish a draft, split, repair, or a new hypothesis
    (``can_split`` False: a command target, which cannot dispatch)."""
    if st and st["stop"]:
        return {"action": "stop", "reason": st["stop_reason"]}
    if missing:
        return {"action": "evaluate", "version": missing[-1], "command": f"kopt eval {missing[-1]}"}
    if drafts:
        return {"action": "finish-draft", "version": drafts[0], "why": "its metadata still says TODO"}
    if comp is None:
        return {"action": "evaluate", "version": "v0", "command": "kopt eval v0"}
    if comp["decision"] == "split-recommended" and can_split:
        return {"action": "split", "dispatch": comp["split"]["dispatch"], "command": "kopt new --split"}
    proposal = comp.get("repair_of") or comp["version"]
    attempt = st["repairs"].get(proposal, 0) + 1
    repairable = proposal in st.get("broken", []) and proposal not in st["abandoned"]
    if comp["reason"] in ("incorrect", "failed") and repairable and attempt <= MAX_REPAIRS:
        v = comp["version"]
        return {
            "action": "repair",
            "version": v,
            "proposal": proposal,
            "attempt": attempt,
            "of": MAX_REPAIRS,
            "why": comp.get("detail"),
            "command": f"kopt new --repair {v}",
        }
    if st["best"] is None:
        return {"action": "stop", "reason": "no correct version and nothing left to repair: write a new v0"}
    return {"action": "new", "from": st["best"], "command": "kopt new"}


def routes(dispatch: list[dict]) -> str:
    """A dispatch in words: "shape square or tall to v5; the rest to v4"."""
    out = []
    for r in dispatch:
        when = " and ".join(f"{k} {' or '.join(map(str, v))}" for k, v in (r.get("when") or {}).items())
        out.append(f"{when or 'the rest'} to {r['use']}")
    return "; ".join(out)


def describe_next(nxt: dict) -> str:
    """The next action in one line."""
    act = nxt["action"]
    if act == "stop":
        return f"STOP: {nxt['reason']}"
    if act == "repair":
        return f"{nxt['command']}   (repair {nxt['attempt']} of {nxt['of']} of {nxt['proposal']}: {nxt['why']})"
    if act == "finish-draft":
        return f"fill in kernels/{nxt['version']}.yaml ({nxt['why']}), then kopt eval"
    if act == "split":
        return f"{nxt['command']}   (dispatch: {routes(nxt['dispatch'])})"
    return nxt["command"] + ("   (then fill in the hypothesis and edit the kernel)" if act == "new" else "")


def record(results: str | Path, versions: list[str], drafts: list[str], can_split: bool = True) -> dict:
    """results/state.json's record: the state, the best's figures per class, the last decision and
    the next action (with the best's bottleneck and top directions when it is a new hypothesis)."""
    comp = last_compare(results, versions)
    st = summary(comp, results) if comp else None
    after = versions.index(comp["version"]) + 1 if comp and comp["version"] in versions else 0
    missing = versions[after:]  # the comparisons are a chain: what follows the last one is not built
    doc = {**(st or {"after": None, "best": None}), "versions": versions, "drafts": drafts}
    doc["classes"] = best_classes(results, doc["best"])
    doc["last"] = {k: comp.get(k) for k in ("version", "decision", "reason", "detail")} if comp else None
    doc["next"] = next_action(st, comp, missing, drafts, can_split)
    if doc["next"]["action"] == "new":
        doc["next"]["from_evidence"] = {
            c: {k: v.get(k) for k in ("bottleneck", "gap", "directions")} for c, v in doc["classes"].items()
        }
    return doc
