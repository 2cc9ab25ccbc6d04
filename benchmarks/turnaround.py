"""Seconds per rule of one version, from Snakemake's own `benchmark:` records
(results/benchmarks/vN/<rule>.tsv; wall time of each job, its CPU time and peak memory), and
where its GPU children's time went (their timelines in bench.json's and profile.json's provenance).

    python3 benchmarks/turnaround.py [results] v1
"""

import json
import sys
from pathlib import Path

import pandas as pd

RULES = (
    "measure",
    "check_then_time",
    "correctness",
    "bench",
    "profile",
    "bottleneck",
    "recorded",
    "compare",
)  # check_then_time and profile: before rule measure; correctness and bench: before check_then_time


def breakdown(results: Path, version: str) -> pd.DataFrame:
    rows = []
    for rule in RULES:
        tsv = results / "benchmarks" / version / f"{rule}.tsv"
        if tsv.is_file():
            b = pd.read_csv(tsv, sep="\t").iloc[-1]
            rows.append(
                {"rule": rule, "wall_s": round(b["s"], 1), "cpu_s": round(b["cpu_time"], 1), "max_rss_mb": b["max_rss"]}
            )
    df = pd.DataFrame(rows)
    total = {"rule": "total", "wall_s": round(df["wall_s"].sum(), 1) if len(df) else 0.0}
    return pd.concat([df, pd.DataFrame([total])], ignore_index=True)


def timelines(results: Path, version: str) -> list[str]:
    """One line per GPU child of the version: seconds after its start at which it was ready and
    began each phase, and its end."""
    lines = []
    for name in ("bench.json", "profile/profile.json"):
        path = results / version / name
        if path.is_file():
            tl = json.loads(path.read_text()).get("provenance", {}).get("child_timeline") or {}
            lines.append(f"{name} child: " + ", ".join(f"{k} {v:g}" for k, v in tl.items()))
    return lines


if __name__ == "__main__":
    args = sys.argv[1:]
    results, version = (Path(args[0]), args[1]) if len(args) == 2 else (Path("results"), args[0])
    print(breakdown(results, version).to_string(index=False))
    print("\n".join(timelines(results, version)))
