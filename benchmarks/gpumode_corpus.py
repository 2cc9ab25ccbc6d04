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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus_gate import gate_row, write_table  # noqa: E402 - it puts the repository on the path too

from kopt.cli.init import _loads  # noqa: E402
from kopt.formats import gpumode_workspace as gw  # noqa: E402


def extract(git_dir: Path, commit: str, dest: Path) -> Path:
    """The commit's ``problems/`` folder written under ``dest``."""
    tar = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", commit, "problems"], check=True, capture_output=True
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(tar)) as t:
        t.extractall(dest, filter="data")
    return dest / "problems"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "source", type=Path, help="a bare git directory of gpu-mode/reference-kernels, or a problems folder"
    )
    ap.add_argument("--commit", default="fec6e3c", help="the commit to extract (fec6e3c: the last MIT-licensed)")
    ap.add_argument("--out", type=Path, default=Path("runs/gpumode-corpus"))
    ap.add_argument("--only", default="", help="run the problems whose name contains this (comma: any of these)")
    ap.add_argument("--device", default="cpu", help="cpu (the tests' configs, interpreted) or cuda (the benchmarks')")
    ap.add_argument("--share-gpu", action="store_true", help="no GPU availability gate: runs in parallel on one GPU")
    a = ap.parse_args()
    for made in ("ws", "gate"):  # an earlier run's workspaces: kopt init writes new ones only
        shutil.rmtree(a.out / made, ignore_errors=True)
    with tempfile.TemporaryDirectory() as tmp:
        problems = a.source if (a.source / "task.yml").exists() or not (a.source / "HEAD").is_file() else None
        problems = problems or extract(a.source, a.commit, Path(tmp))
        rows, source = [], f"{a.source} at {a.commit}"
        for yml in sorted(problems.rglob("task.yml")):
            if any(o in (name := str(yml.parent.relative_to(problems))) for o in a.only.split(",")):
                init = lambda ws, src=yml.parent: gw.init(ws, src, check=_loads)  # noqa: E731
                rows.append(gate_row(name, init, a.out, a.device, a.share_gpu))
                write_table(rows, a.out, source, a.device, say=False)  # a run cut short leaves its rows
    write_table(rows, a.out, source, a.device)


if __name__ == "__main__":
    main()
