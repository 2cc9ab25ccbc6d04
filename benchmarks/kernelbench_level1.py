"""Every KernelBench problem of a folder through `kopt init --kernelbench` and v0's (torch eager's)
correctness gate on the CPU configs it derives: how many import and pass, why each of the rest does
not, and how long each took. Outside CI (minutes); its table is committed (docs/runs/).

    git clone https://github.com/ScalingIntelligence/KernelBench   # or the device tool's fetch
    python benchmarks/kernelbench_level1.py KernelBench/KernelBench/level1 --out runs/kernelbench-level1

Writes OUT/table.md and OUT/table.csv (problem, stage reached, seconds, the one line of a failure).
"""

import argparse
import sys
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kopt.formats import kernelbench_workspace as kw  # noqa: E402
from kopt.steps.bench import check_then_time  # noqa: E402

PARAMS = {
    "device": "cpu",
    "timeout_s": 300,
    "bench": {"warmup_ms": 10, "rep_ms": 20, "min_samples": 10, "max_samples": 50, "flush_l2": True},
}


def one(src: Path, out: Path) -> dict:
    t0, ws = time.perf_counter(), out / "ws" / src.stem
    row = {"problem": src.stem, "stage": "init", "s": 0.0, "why": ""}
    try:
        kw.init(ws, src)
        row["stage"] = "gate"
        corr, _ = check_then_time(
            out / "gate" / src.stem, version="v0", target=str(ws / "target.yaml"), kernel=str(ws / "kernels" / "v0.py"),
            log=str(out / "gate" / src.stem / "steps.log"), params=PARAMS, time=False,
        )  # fmt: skip
        row["stage"] = "pass" if corr["status"] == "pass" else "gate"
        row["why"] = "" if corr["status"] == "pass" else f"{corr['status']}: {corr.get('error')}"
    except Exception as e:  # noqa: BLE001 - each problem's failure is a row, not the end of the run
        row["why"] = f"{type(e).__name__}: {e}"
    row["s"] = round(time.perf_counter() - t0, 1)
    row["why"] = " ".join(str(row["why"]).split())[:300]
    return row


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--out", type=Path, default=Path("runs/kernelbench-level1"))
    a = ap.parse_args()
    rows = []
    files = sorted(a.folder.glob("*.py"), key=lambda p: int(p.stem.split("_")[0]))
    for src in files:
        rows.append(one(src, a.out))
        r = rows[-1]
        print(f"{r['problem']}: {r['stage']} ({r['s']} s) {r['why']}", flush=True)
    df = pd.DataFrame(rows)
    a.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(a.out / "table.csv", index=False)
    counts = df["stage"].value_counts().to_dict()
    head = (
        f"{len(df)} problems from {a.folder}: {counts.get('pass', 0)} pass v0's gate on the CPU, "
        f"{counts.get('gate', 0)} made a workspace that did not pass, {counts.get('init', 0)} made none; "
        f"{df['s'].sum():.0f} s in all.\n\n"
    )
    (a.out / "table.md").write_text(head + df.to_markdown(index=False) + "\n")
    print(head)


if __name__ == "__main__":
    main()
