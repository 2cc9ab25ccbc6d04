"""Every KernelBench problem of a folder through `kopt init --kernelbench` and v0's (torch eager's)
correctness gate on the CPU configs it derives: how many import and pass, why each of the rest does
not, and how long each took. Outside CI (minutes); its table is committed (docs/runs/).

    git clone https://github.com/ScalingIntelligence/KernelBench   # or the device tool's fetch
    python benchmarks/kernelbench_level1.py KernelBench/KernelBench/level1 --out runs/kernelbench-level1

Writes OUT/table.md and OUT/table.csv (problem, stage reached, seconds, the one line of a failure).
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_gate import gate_row, write_table  # noqa: E402 - it puts the repository on the path too

from kopt.formats import kernelbench_workspace as kw  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--out", type=Path, default=Path("runs/kernelbench-level1"))
    a = ap.parse_args()
    files = sorted(a.folder.glob("*.py"), key=lambda p: int(p.stem.split("_")[0]))
    rows = [gate_row(src.stem, lambda ws, src=src: kw.init(ws, src), a.out) for src in files]
    write_table(rows, a.out, str(a.folder))


if __name__ == "__main__":
    main()
