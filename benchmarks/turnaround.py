"""Seconds per rule of one version, from Snakemake's own `benchmark:` records
(results/benchmarks/vN/<rule>.tsv; wall time of each job, its CPU time and peak memory).

    python3 benchmarks/turnaround.py [results] v1
"""

import sys
from pathlib import Path

import pandas as pd

RULES = (
    "check_then_time",
    "correctness",
    "bench",
    "profile",
    "bottleneck",
    "compare",
)  # correctness, bench: before the merge


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


if __name__ == "__main__":
    args = sys.argv[1:]
    results, version = (Path(args[0]), args[1]) if len(args) == 2 else (Path("results"), args[0])
    print(breakdown(results, version).to_string(index=False))
