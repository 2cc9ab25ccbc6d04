"""What the corpus scripts share (kernelbench_level1.py, gpumode_corpus.py): one problem through
its `kopt init` and v0's correctness gate on the CPU, as a table row, and the table of all rows."""

import sys
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kopt.steps.bench import check_then_time  # noqa: E402

PARAMS = {
    "device": "cpu",
    "timeout_s": 300,
    "bench": {"warmup_ms": 10, "rep_ms": 20, "min_samples": 10, "max_samples": 50, "flush_l2": True},
}


def gate_row(
    name: str, init: Callable[[Path], list[str] | None], out: Path, device: str = "cpu", share_gpu: bool = False
) -> dict:
    """``init(ws)`` writes the problem's workspace, then v0's gate: the stage reached (init, gate,
    pass), what init said of the tolerance, what the gate applied and measured
    (``_gate_figures``), the seconds, and the one line of a failure. Printed as it ends. ``share_gpu``: the GPU
    availability gate off (kopt.loop.gate), so that several corpus runs check correctness on one GPU
    at once; nothing is timed here, and the gate would hold each run's GPU for its whole life."""
    t0, slug = time.perf_counter(), name.replace("/", "+")
    ws, gate = out / "ws" / slug, out / "gate" / slug
    row = {"problem": name, "stage": "init", "s": 0.0, "why": ""}
    try:
        said = init(ws) or []
        row["stage"], row["tolerances"] = "gate", _tolerances_said(said)
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
    """What v0's gate applied and measured, to set beside what init said: the widest atol over its
    configs, the worst max_abs (|a - b|: at least init's |a - b| / (1 + |b|) on the same outputs)
    and max_rel (|a - b| / |b|) over its configs and draws, and the precision its references ran in."""
    configs = corr.get("configs") or []
    worst = lambda k: max((c.get(k) or 0.0 for c in configs), default=None)  # noqa: E731
    precision = sorted({(c.get("reference") or {}).get("precision", "?") for c in configs})
    figures = {"atol": worst("atol"), "max_abs": worst("max_abs"), "max_rel": worst("max_rel")}
    return {**figures, "reference": ",".join(precision)}


def _tolerances_said(said: list[str]) -> str:
    """What init said of the tolerance it chose (KernelBench's ``tolerances:`` line, gpu-mode's
    ``tolerance:``, without the v0 it names after it); empty for the other formats."""
    line = next((x.strip() for x in said if x.strip().startswith(("tolerances:", "tolerance:"))), "")
    return line.partition(":")[2].split("; v0:")[0].strip()


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
