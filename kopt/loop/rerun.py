"""A past version's results against a rerun of it (`kopt rerun`): per config the gate's verdict,
per config class the GPU time with the noise rule, and every difference in what the two runs were
made from and ran on. Pure: reads two results trees, returns the record of rerun.json."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from kopt.loop.decide import Params, class_noise, geomean
from kopt.workspace.records import gpu_column

# what a run was made from (correctness.json's provenance): a difference means another version ran;
# and its settings, compared value by value (below)
INPUTS = ("kernel_sha256", "routed_sha256", "ref_sha256", "target_sha256", "commit")
# what it ran on (provenance.env): differences explain a timing, they do not make another version
MACHINE = ("device", "gpu", "driver", "cuda", "hip", "torch", "triton", "python", "kopt")


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def _differences(a: dict, b: dict, keys) -> list[dict]:
    return [{"what": k, "recorded": a.get(k), "rerun": b.get(k)} for k in keys if a.get(k) != b.get(k)]


def _flat(d: dict, prefix: str = "settings.") -> dict:
    out = {}
    for k, v in d.items():
        out.update(_flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


def settings_differences(a: dict, b: dict) -> list[dict]:
    """Settings both runs read with other values (a setting only one of them read, e.g. the
    timing's in a gate-only record, cannot have changed the other's result)."""
    fa, fb = _flat(a or {}), _flat(b or {})
    return [{"what": k, "recorded": fa[k], "rerun": fb[k]} for k in sorted(set(fa) & set(fb)) if fa[k] != fb[k]]


def correctness_differences(a: dict, b: dict) -> list[dict]:
    """Configs whose verdict (PASS, FAIL, FAILED, NOT RUN) is not the same in both runs."""
    got = {c["key"]: c["result"] for c in b["configs"]}
    out = [
        {"config": c["key"], "recorded": c["result"], "rerun": got.get(c["key"])}
        for c in a["configs"]
        if got.get(c["key"]) != c["result"]
    ]
    if a["status"] != b["status"]:
        out.insert(0, {"config": "(all)", "recorded": a["status"], "rerun": b["status"]})
    return out


def class_deltas(a: pd.DataFrame, b: pd.DataFrame, params: Params) -> list[dict]:
    """Per config class: the rerun's time against the recorded one (geometric mean of the per-config
    ratios, as compare computes a class), on the GPU time that decides where both runs have it on
    one clock for every config (``gpu_column``), else the script's median; within the noise rule's
    threshold (kopt.loop.decide.class_noise, with the decision's ``params``) it is the same."""
    a, b = a[a["status"] == "ok"].set_index("config_key"), b[b["status"] == "ok"].set_index("config_key")
    out = []
    for cls, rows in a.groupby("config_class", sort=False):
        keys = [k for k in rows.index if k in b.index]
        if not keys:
            out.append({"class": cls, "verdict": "not timed in both runs"})
            continue
        col_a, col_b = gpu_column(a.loc[keys]), gpu_column(b.loc[keys])
        col = col_a if col_a and col_a == col_b else "median_us"
        (ta, sa, na), (tb, sb, nb) = _times(a, col, keys), _times(b, col, keys)
        delta = (geomean(tb[k] / ta[k] for k in keys) - 1) * 100
        noise, _ = class_noise(params, keys, ta, sa, tb, sb, na, nb)
        verdict = "same" if abs(delta) < noise else ("faster" if delta < 0 else "slower")
        out.append({"class": cls, "basis": col, "configs": len(keys), "delta_pct": round(delta, 3), "verdict": verdict})
    return out


def _times(df: pd.DataFrame, col: str, keys: list[str]) -> tuple[dict, dict, dict]:
    """One run's times on ``col`` per config and, on Nsight Compute's, their standard errors and the
    calls behind them (gpu_se_us, gpu_calls, where recorded)."""

    def known(name: str) -> dict:
        s = df[name] if col == "gpu_us" and name in df else pd.Series(dtype=float)
        return {k: float(s[k]) for k in keys if k in s and pd.notna(s[k])}

    return {k: float(df.loc[k, col]) for k in keys}, known("gpu_se_us"), known("gpu_calls")


def timing_status_differences(a: pd.DataFrame, b: pd.DataFrame) -> list[dict]:
    """Configs timed (ok) in one run and not in the other (failed, skipped, missing)."""
    sa, sb = dict(zip(a["config_key"], a["status"], strict=True)), dict(zip(b["config_key"], b["status"], strict=True))
    return [
        {"config": k, "recorded": sa.get(k), "rerun": sb.get(k)}
        for k in sorted(set(sa) | set(sb))
        if sa.get(k) != sb.get(k)
    ]


def package_differences(a: dict | None, b: dict | None) -> list[dict]:
    """Packages whose exact version differs between the two runs' recorded manifests."""
    if not a or not b:
        return []
    names = sorted(set(a) | set(b))
    return [{"package": n, "recorded": a.get(n), "rerun": b.get(n)} for n in names if a.get(n) != b.get(n)]


def compare_runs(recorded: Path, rerun: Path, version: str, params: Params) -> dict:
    """The rerun's verdict: ``reproduces`` when every config has the same gate verdict, every class
    the same time within the noise rule (GPU runs only: CPU-interpreter timings are not compared)
    and the same files ran; else ``differs``, with what differs."""
    ca, cb = _json(recorded / version / "correctness.json"), _json(rerun / version / "correctness.json")
    ba, bb = (pd.read_csv(t / version / "bench.csv") for t in (recorded, rerun))
    cpu = "cpu" in (ca["device"], cb["device"])
    timing = [] if cpu else class_deltas(ba, bb, params)
    env_a, env_b = ca["provenance"].get("env") or {}, cb["provenance"].get("env") or {}
    manifests = [t / version / "recorded" / "manifest.json" for t in (recorded, rerun)]
    pkgs = [_json(m)["packages"] if m.is_file() else None for m in manifests]
    doc = {
        "version": version,
        "recorded": str(recorded / version),
        "rerun": str(rerun / version),
        "noise_pct": params.noise_pct,
        "correctness": correctness_differences(ca, cb),
        "timing": timing,
        "timing_status": timing_status_differences(ba, bb),
        "timing_note": "not compared: CPU-interpreter timings are not GPU performance" if cpu else None,
        "inputs": _differences(ca["provenance"], cb["provenance"], INPUTS)
        + settings_differences(ca["provenance"].get("settings"), cb["provenance"].get("settings")),
        "machine": _differences(env_a, env_b, MACHINE)
        + _differences(
            env_a.get("libraries") or {}, env_b.get("libraries") or {}, sorted(env_a.get("libraries") or {})
        ),
        "packages": package_differences(*pkgs),
    }
    moved = [t for t in timing if t["verdict"] not in ("same",)]
    differs = doc["correctness"] or doc["timing_status"] or moved or doc["inputs"]
    doc["verdict"] = "differs" if differs else "reproduces"
    return doc


def summary(doc: dict) -> list[str]:
    """The verdict in a few lines, for the terminal and rerun.md."""
    lines = [f"{doc['version']}: {doc['verdict']} (recorded {doc['recorded']}, rerun {doc['rerun']})"]
    for c in doc["correctness"]:
        lines.append(f"  correctness {c['config']}: {c['recorded']} -> {c['rerun']}")
    for c in doc["timing_status"]:
        lines.append(f"  timing {c['config']}: {c['recorded']} -> {c['rerun']}")
    for t in doc["timing"]:
        if "delta_pct" in t:
            lines.append(f"  class {t['class']}: {t['delta_pct']:+.2f}% on {t['basis']} ({t['verdict']})")
        else:
            lines.append(f"  class {t['class']}: {t['verdict']}")
    if doc["timing_note"]:
        lines.append(f"  timing {doc['timing_note']}")
    for kind in ("inputs", "machine"):
        for d in doc[kind]:
            lines.append(f"  {kind} differ: {d['what']}: {d['recorded']} -> {d['rerun']}")
    for p in doc["packages"][:20]:
        lines.append(f"  package {p['package']}: {p['recorded']} -> {p['rerun']}")
    if len(doc["packages"]) > 20:
        lines.append(f"  ... and {len(doc['packages']) - 20} more packages")
    return lines
