"""Every gpu-mode reference-kernels problem of a commit through `kopt init --gpumode` and v0's (its
own submission.py's) correctness gate on the CPU: which make a workspace, which pass, and the one
line that stopped each of the rest. Outside CI (minutes).

    python benchmarks/gpumode_corpus.py /work/.mirror/gpu-mode+reference-kernels/repo --commit fec6e3c

The problems (each folder holding a task.yml) are extracted from the bare git directory at that
commit into a temporary folder; a folder given instead of a git directory is used as it is. Most
problems make their tensors on "cuda": on the CPU kopt makes them on the CPU instead, but a problem
that needs a GPU library (an AMD or NVIDIA extension, fp4 types, a distributed group) fails there.
Prints one line per problem and a total; writes OUT/table.md and OUT/table.csv.
"""

import argparse
import io
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kopt.cli.init import _loads  # noqa: E402
from kopt.formats import gpumode_workspace as gw  # noqa: E402
from kopt.steps.bench import check_then_time  # noqa: E402

PARAMS = {
    "device": "cpu",
    "timeout_s": 300,
    "bench": {"warmup_ms": 10, "rep_ms": 20, "min_samples": 10, "max_samples": 50, "flush_l2": True},
}


def extract(git_dir: Path, commit: str, dest: Path) -> Path:
    """The commit's ``problems/`` folder written under ``dest``."""
    tar = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", commit, "problems"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(dest, filter="data")
    return dest / "problems"


def one(src: Path, name: str, out: Path) -> dict:
    """One problem: init as the CLI does (the workspace loader checks it), then v0's gate."""
    t0, ws = time.perf_counter(), out / "ws" / name.replace("/", "+")
    row = {"problem": name, "stage": "init", "s": 0.0, "why": ""}
    try:
        gw.init(ws, src, check=_loads)
        row["stage"] = "gate"
        gate = out / "gate" / name.replace("/", "+")
        corr, _ = check_then_time(
            gate, version="v0", target=str(ws / "target.yaml"), kernel=str(ws / "kernels" / "v0.py"),
            log=str(gate / "steps.log"), params=PARAMS, time=False,
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
    ap.add_argument(
        "source", type=Path, help="a bare git directory of gpu-mode/reference-kernels, or a problems folder"
    )
    ap.add_argument("--commit", default="fec6e3c", help="the commit to extract (fec6e3c: the last MIT-licensed)")
    ap.add_argument("--out", type=Path, default=Path("runs/gpumode-corpus"))
    ap.add_argument("--only", default="", help="run the problems whose name contains this")
    a = ap.parse_args()
    for made in ("ws", "gate"):  # an earlier run's workspaces: kopt init writes new ones only
        shutil.rmtree(a.out / made, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        problems = a.source if (a.source / "task.yml").exists() or not (a.source / "HEAD").is_file() else None
        problems = problems or extract(a.source, a.commit, Path(tmp))
        rows = []
        for yml in sorted(problems.rglob("task.yml")):
            name = str(yml.parent.relative_to(problems))
            if a.only in name:
                rows.append(one(yml.parent, name, a.out))
                r = rows[-1]
                print(f"{r['problem']}: {r['stage']} ({r['s']} s) {r['why']}", flush=True)
    df = pd.DataFrame(rows)
    a.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(a.out / "table.csv", index=False)
    counts = df["stage"].value_counts().to_dict()
    head = (
        f"{len(df)} problems from {a.source} at {a.commit}: {counts.get('pass', 0)} pass v0's gate on the CPU, "
        f"{counts.get('gate', 0)} made a workspace that did not pass, {counts.get('init', 0)} made none; "
        f"{df['s'].sum():.0f} s in all.\n"
    )
    (a.out / "table.md").write_text(head + "\n" + df.to_markdown(index=False) + "\n")
    print(head)


if __name__ == "__main__":
    main()
