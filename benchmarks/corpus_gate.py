"""What the corpus scripts share (kernelbench_level1.py, gpumode_corpus.py): one problem through
its `kopt init` and v0's correctness gate on the CPU, as a table row, and the table of all rows."""

import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kopt.steps.bench import check_then_time  # noqa: E402

PARAMS = {
    "device": "cpu",
    "timeout_s": 300,
    "bench": {"warmup_ms": 10, "rep_ms": 20, "min_samples": 10, "max_samples": 50, "flush_l2": True},
}


def gate_row(name: str, init: Callable[[Path], None], out: Path, device: str = "cpu", share_gpu: bool = False) -> dict:
    """``init(ws)`` writes the problem's workspace, then v0's gate: the stage reached (init, gate,
    pass), the float32 atol init wrote and what it said of it, what the gate measured
    (``_gate_figures``), the seconds, and the one line of a failure. Printed as it ends. ``share_gpu``: the GPU
    availability gate off (kopt.loop.gate), so that several corpus runs check correctness on one GPU
    at once; nothing is timed here, and the gate would hold each run's GPU for its whole life."""
    t0, slug = time.perf_counter(), name.replace("/", "+")
    ws, gate = out / "ws" / slug, out / "gate" / slug
    row = {"problem": name, "stage": "init", "s": 0.0, "why": ""}
    try:
        said = init(ws) or []
        row["stage"], row["atol"] = "gate", _float32_atol(ws / "target.yaml")
        row["tolerances"] = next((x.split(":", 1)[1].strip() for x in said if x.strip().startswith("tolerances:")), "")
        corr, _ = check_then_time(
            gate, version="v0", target=str(ws / "target.yaml"), kernel=str(ws / "kernels" / "v0.py"),
            log=str(gate / "steps.log"), params={**PARAMS, "device": device, "gate": {"enabled": not share_gpu}}, time=False,
        )  # fmt: skip
        row["stage"] = "pass" if corr["status"] == "pass" else "gate"
        row.update(_gate_figures(corr))
        row["why"] = "" if corr["status"] == "pass" else f"{corr['status']}: {corr.get('error')}"
    except Exception as e:  # noqa: BLE001 - each problem's failure is a row, not the end of the run
        row["why"] = f"{type(e).__name__}: {e}"
    row["s"] = round(time.perf_counter() - t0, 1)
    row["why"] = " ".join(str(row["why"]).split())[:300]
    print(f"{row['problem']}: {row['stage']} ({row['s']} s) {row['why']}", flush=True)
    return row


def _gate_figures(corr: dict) -> dict:
    """What v0's gate measured, to set beside init's figures: the worst max_abs and max_rel over its
    configs and draws, and the precision its references ran in (float64, or why not)."""
    configs = corr.get("configs") or []
    worst = lambda k: max((c.get(k) or 0.0 for c in configs), default=None)  # noqa: E731
    precision = sorted({(c.get("reference") or {}).get("precision", "?") for c in configs})
    return {"max_abs": worst("max_abs"), "max_rel": worst("max_rel"), "reference": ",".join(precision)}


def _float32_atol(target: Path) -> float | None:
    """The float32 atol init wrote (a KernelBench workspace's own, or its default); None if none."""
    tol = (yaml.safe_load(target.read_text()) or {}).get("tolerances") or {}
    return (tol.get("float32") or tol.get("default") or {}).get("atol")


def write_table(rows: list[dict], out: Path, source: str, device: str = "cpu", say: bool = True) -> None:
    """OUT/table.csv and OUT/table.md (a count line, then the rows); the count line printed unless
    ``say`` is False (a table rewritten after each row, so that a run cut short leaves its rows)."""
    df = pd.DataFrame(rows)
    out.mkdir(parents=True, exist_ok=True)
    df.to_csv(out / "table.csv", index=False)
    counts = df["stage"].value_counts().to_dict()
    head = (
        f"{len(df)} problems from {source}: {counts.get('pass', 0)} pass v0's gate on the {device.upper()}, "
        f"{counts.get('gate', 0)} made a workspace that did not pass, {counts.get('init', 0)} made none"
        + (f", {counts['not started']} not started" if "not started" in counts else "")
        + "; "
        f"{df['s'].sum():.0f} s in all.\n\n"
    )
    (out / "table.md").write_text(head + df.to_markdown(index=False) + "\n")
    if say:
        print(head)
