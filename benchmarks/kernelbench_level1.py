"""Every KernelBench problem of a folder through `kopt init --kernelbench` and v0's (torch eager's)
correctness gate, on the CPU configs it derives or (``--device cuda``) on a GPU at the file's own
sizes: how many import and pass, why each of the rest does not, and how long each took. Any level's
folder; outside CI (minutes); its table is committed (docs/runs/).

    git clone https://github.com/ScalingIntelligence/KernelBench   # or the device tool's fetch
    python benchmarks/kernelbench_level1.py KernelBench/KernelBench/level1 --out runs/kernelbench-level1
    python benchmarks/kernelbench_level1.py KernelBench/KernelBench/level3 --device cuda --only 1_MLP,9_ResNet18 --budget 300

``--jobs N`` checks N problems at once on one GPU (N runs of this script with ``--share-gpu``, each
on every Nth problem; their tables merged): the gate is correctness only; without ``--share-gpu``,
kopt's GPU availability gate holds the GPU for the first run's whole life and the others wait. On
an H200 six runs by hand with ``--share-gpu`` took 217 s for 179 problems, before init checked the
files' own sizes on the GPU (with it, six ran out of GPU memory: use fewer).

Writes OUT/table.md and OUT/table.csv (problem, stage reached, seconds, the one line of a failure,
what init said of the tolerance, the gate's atol, worst max_abs and max_rel, its references' precision;
with ``--same-seeds``, init's figure on the gate's own seeds).
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_gate import gate_row, write_table  # noqa: E402 - it puts the repository on the path too

from kopt.formats import kernelbench_workspace as kw  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--out", type=Path, default=Path("runs/kernelbench-level1"))
    ap.add_argument("--device", default="cpu", help="cpu (the derived configs, interpreted) or cuda (the file's own)")
    ap.add_argument("--only", default="", help="comma-separated problem names (file stems), in that order")
    ap.add_argument("--budget", type=float, default=None, help="seconds after which no further problem starts")
    ap.add_argument("--share-gpu", action="store_true", help="no GPU availability gate: runs in parallel on one GPU")
    ap.add_argument("--jobs", type=int, default=1, help="runs at once, sharing the GPU (each a part of the problems)")
    ap.add_argument(
        "--same-seeds", action="store_true", help="init's float32-to-float64 figure on the gate's seeds too"
    )
    a = ap.parse_args()
    files = sorted(a.folder.glob("*.py"), key=lambda p: int(p.stem.split("_")[0]))
    if a.only:
        by_stem = {p.stem: p for p in files}
        files = [by_stem[n] for n in a.only.split(",")]
    if a.jobs > 1:
        write_table(_in_parts(a, files), a.out, str(a.folder), a.device)
        return
    t0, rows = time.perf_counter(), []
    for src in files:
        if a.budget is not None and time.perf_counter() - t0 > a.budget:
            rows.append({"problem": src.stem, "stage": "not started", "s": 0.0, "why": f"past --budget {a.budget:g} s"})
            continue
        rows.append(gate_row(src.stem, lambda ws, src=src: kw.init(ws, src), a.out, a.device, a.share_gpu))
        if a.same_seeds and rows[-1]["stage"] != "init":
            rows[-1]["init_worst_on_gate_seeds"] = _init_on_gate_seeds(a.out, src.stem)
        write_table(rows, a.out, str(a.folder), a.device, say=False)
    write_table(rows, a.out, str(a.folder), a.device)


def _init_on_gate_seeds(out: Path, name: str) -> str:
    """Init's figure (the worst |a - b| / (1 + |b|), float32 against float64, in its child) on the
    very seeds and configs v0's gate drew, per config: beside the gate's verdict it tells a draw
    init did not see from a run that differs (level 2's Gemm_Divide_Sum_Scaling on an H200: init's
    draw met 1e-4 twice over, the gate missed it in every run)."""
    ws, corr = out / "ws" / name, json.loads((out / "gate" / name / "correctness.json").read_text())
    figures = []
    for c in corr["configs"]:
        seeds = [s["seed"] for s in c["seeds"]]
        args = {"path": str(ws / "problem.py"), "sizes": c["config"], "draws": seeds, "source": str(ws / "problem.py")}
        worst, why = kw._in_child({**args, "device": corr["device"], "n": 0})
        figures.append(f"{c['key']}: {worst:.3g}" if worst is not None else f"{c['key']}: {why}")
    return "; ".join(figures)


def _in_parts(a: argparse.Namespace, files: list[Path]) -> list[dict]:
    """``a.jobs`` runs of this script at once, each on every a.jobs-th problem with ``--share-gpu``
    (OUT/part<i>/, its log OUT/part<i>.log); their rows, in the problems' order."""
    parts = [files[i :: a.jobs] for i in range(a.jobs)]
    a.out.mkdir(parents=True, exist_ok=True)
    runs = []
    for i, part in enumerate(p for p in parts if p):
        cmd = [sys.executable, __file__, str(a.folder), "--out", str(a.out / f"part{i}"), "--device", a.device]
        cmd += ["--only", ",".join(f.stem for f in part), "--share-gpu"]
        cmd += ["--budget", str(a.budget)] if a.budget is not None else []
        cmd += ["--same-seeds"] if a.same_seeds else []
        with open(a.out / f"part{i}.log", "w") as log:
            runs.append((subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT), a.out / f"part{i}"))
    rows = []
    for run, out in runs:
        run.wait()
        if (out / "table.csv").is_file():
            rows += pd.read_csv(out / "table.csv").fillna("").to_dict("records")
    order = {f.stem: k for k, f in enumerate(files)}
    done = {r["problem"] for r in rows}
    rows += [
        {"problem": f.stem, "stage": "not started", "s": 0.0, "why": "its part ended first"}
        for f in files
        if f.stem not in done
    ]
    return sorted(rows, key=lambda r: order[r["problem"]])


if __name__ == "__main__":
    main()
