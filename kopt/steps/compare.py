"""Rules `compare` and `state` (rules/compare.smk): one version's records folded into the
decision chain, and results/state.json after the last version."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import yaml

from kopt.loop import decide as dec
from kopt.loop.state import record
from kopt.steps.common import write_json
from kopt.workspace.provenance import hashes, now
from kopt.workspace.records import config_columns, gpu_times
from kopt.workspace.target import load_workspace


def candidate(version: str, correctness_json: str, df: pd.DataFrame, meta: dict, kernel: str) -> dec.Candidate:
    """One version's records as the fold takes them: status, both clocks per config, classes, routes,
    metadata (target class, repair, mask, override), and whether its timings are evidence."""
    corr = json.loads(Path(correctness_json).read_text())
    prov = corr.get("provenance") or {}  # the judge's record: its gate, the settings it drew with, the machine
    tc = meta.get("target_class", "all")
    tcs = [tc] if isinstance(tc, str) else list(tc)
    status, reason = corr["status"], corr["error"]
    if status == "pass":
        failed = df[df["status"] != "ok"]
        if len(failed) or df["median_us"].isna().any() or (df["median_us"] <= 0).any():
            status = "failed"
            reason = str(failed["error"].iloc[0]) if len(failed) else "benchmark produced no valid median"
    ok = status == "pass"
    evidence = not (len(df) and df["method"].astype(str).str.startswith("cpu-").any())
    # the judge's own gate record says no GPU became idle, never the error's text: a kernel's fault
    # reads as it likes ("gate: no idle GPU ..." stopped the loop for good, an adversary's version)
    gate_timeout = (prov.get("gate") or {}).get("gate") == "timeout"
    routes = None
    if meta.get("dispatch"):
        from kopt.workspace.target import route_for

        cols = config_columns(df)
        routes = {r.config_key: route_for(meta["dispatch"], {c: getattr(r, c) for c in cols}) for r in df.itertuples()}
    return dec.Candidate(
        repair_of=meta.get("repair_of"),
        masked=bool(meta.get("masked", False)),
        override=meta.get("override"),
        routes=routes,
        gate_timeout=gate_timeout,
        predictable=((prov.get("settings") or {}).get("inputs") or {}).get("seed") is not None,
        version=version,
        status="ok" if ok else status,
        reason=reason,
        medians={r.config_key: float(r.median_us) for r in df.itertuples()} if ok else {},
        class_of={r.config_key: r.config_class for r in df.itertuples()},
        target_classes=None if "all" in tcs else tcs,
        hypothesis=meta.get("hypothesis", ""),
        files=[kernel],
        **(gpu_times(df) if ok else {}),
        evidence=bool(evidence),
        interpreter=bool(len(df) and (df["method"].astype(str) == "cpu-interpreter").any()),
        machine=(prov.get("env") or {}).get("machine") if ok else None,
    )


def compare(
    *,
    version: str,
    target: str,
    kernel: str,
    meta_yaml: str,
    correctness_json: str,
    bench_csv: str,
    prev_compare: str | None,
    out_json: str,
    params: dict,
    parent: str | None = None,
    parent_kernel: str | None = None,
) -> dict:
    """compare.json: the fold's decision for this version against the state after the previous one,
    with its diff size against ``parent`` (its kernel: ``parent_kernel``), provenance and experience
    entry. It reads no profile: the decision rests on the gate and the timings alone, and is written
    before the version is profiled (its roofline and bottleneck are bottleneck.json's)."""
    ws = load_workspace(Path(target).parent, versions=False)
    state = json.loads(Path(prev_compare).read_text())["state"] if prev_compare else dec.initial_state()
    df = pd.read_csv(bench_csv)
    meta = yaml.safe_load(Path(meta_yaml).read_text()) or {}
    cand = candidate(version, correctness_json, df, meta, kernel)
    cand.self_reported = ws.command is not None  # the workspace says so, not a file its command could rewrite
    p = dec.from_settings(params)
    comp, _ = dec.decide(state, cand, p)
    comp["device"] = str(df["device"].iloc[0]) if len(df) else None
    comp["method"] = str(df["method"].iloc[0]) if len(df) else None
    comp["hypothesis"] = cand.hypothesis
    comp["target_classes"] = cand.target_classes or "all"
    comp["diff"] = diff_size(kernel, parent_kernel)
    corr_prov = json.loads(Path(correctness_json).read_text()).get("provenance") or {}
    comp["provenance"] = {**hashes(kernel, ws.ref, ws.target, params), "created": now()}
    if corr_prov.get("commit"):  # a command target's version: the commit its worktree was built at
        comp["provenance"]["commit"] = corr_prov["commit"]
    gpu = (corr_prov.get("env") or {}).get("gpu")
    comp["experience"] = _experience_entry(comp, ws, df, parent, meta.get("strategy"), gpu)
    write_json(out_json, _clean(comp))
    return comp


def diff_size(kernel: str, parent: str | None) -> dict | None:
    """Lines changed against the parent's kernel: one idea per version cannot be checked, but a
    reviewer sees how big the change is."""
    import difflib

    if not parent or not Path(parent).is_file() or Path(kernel).suffix != Path(parent).suffix:
        return None  # a dispatch's routes, or a CUDA version after a Triton one: no line diff says anything
    a, b = Path(parent).read_text().splitlines(), Path(kernel).read_text().splitlines()
    added = removed = 0
    for line in difflib.unified_diff(a, b, lineterm="", n=0):
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return {"parent": str(parent), "lines_added": added, "lines_removed": removed, "lines_changed": added + removed}


def _experience_entry(
    comp: dict, ws, df: pd.DataFrame, parent: str | None, strategy: str | None, gpu: str | None
) -> dict:
    """This comparison as an experience-log entry (rule `experience` collects them into the
    project's store, and names the bottleneck the version set out from: its ``parent``'s);
    CPU-interpreter timings teach nothing, and a version this machine could not run tried nothing,
    so they give none."""
    from kopt.loop.experience import entry_from_comparison

    if comp.get("evidence"):
        return {"skipped": comp["evidence"]}
    if comp["decision"] == "skipped":
        return {"skipped": comp["detail"]}
    # the GPU's name (also for a version that was never benchmarked), else the device column
    chip = gpu or (str(df["device"].iloc[0]) if len(df) else "cpu")
    entry = entry_from_comparison(
        comp, kernel_type=ws.name, chip=chip, parent=parent, strategy=strategy, workspace=str(ws.root)
    )
    return {"entry": entry}


def _clean(obj):
    """JSON has no NaN: write null instead."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_clean(v) for v in obj]
    return obj


def write_state(results: str, versions: list[str], drafts: list[str], out_json: str, can_split: bool = True) -> dict:
    """results/state.json: the loop state after the last version, the best's figures per class and
    the next action (kopt.loop.state.record, which `kopt status --json` prints too)."""
    doc = {**record(results, versions, drafts, can_split), "created": now()}
    write_json(out_json, doc)
    return doc
