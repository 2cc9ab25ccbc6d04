"""``kopt init DIR --repo PATH --command "CMD"``: a workspace of kind ``command`` from a git
repository and its benchmark command (kopt.workspace.command judges it).

The command runs once, in the repository as it is, by the shell. The CSV it wrote (the one CSV
file it created or changed, or ``--csv``) gives the columns: ``err_*`` are the error columns,
``us_*`` the times (the one that is not a reference's, or ``--time-column``), the rest name the
configs; the classes are the config column that varies with the fewest values (or ``--class-by``).
v0 is the repository's current commit, and the command's own script, when it is a file of the
repository, is fixed at v0's copy in every version (a version changes the kernel, never its judge).
What it cannot infer is one line naming the repository, the command or the file.
"""

from __future__ import annotations

import math
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import yaml

from kopt.formats import staged

REFERENCE_WORDS = ("ref", "torch", "eager", "baseline", "cublas", "cudnn")  # us_* columns that are not the kernel's
RUN_TIMEOUT_S = 1800


class RepositoryError(ValueError):
    """What kopt cannot infer from the repository or its command: one line naming it."""


def _git(repo: Path, *args: str) -> str:
    out = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise RepositoryError(f"{repo}: git {' '.join(args)} failed: {out.stderr.strip()[:300]}")
    return out.stdout.strip()


def with_our_python(env: dict | None = None) -> dict:
    """``env`` with the folder of the Python that runs kernel-opt first on PATH: a user's command's
    ``python3`` is the one with torch and Triton, its environment activated or not."""
    path = (env or {}).get("PATH", os.environ.get("PATH", ""))
    return {**(env or {}), "PATH": os.pathsep.join([str(Path(sys.executable).parent), path])}


def _csvs(repo: Path) -> dict[Path, float]:
    return {p: p.stat().st_mtime for p in repo.rglob("*.csv") if ".git" not in p.relative_to(repo).parts}


def run_once(repo: Path, command: str, csv_glob: str | None) -> Path:
    """The CSV the command wrote: ``csv_glob``'s newest match, or the one CSV it created or changed."""
    before, t0 = _csvs(repo), time.time()
    try:
        out = subprocess.run(
            command, shell=True, cwd=repo, env={**os.environ, **with_our_python()},
            capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        raise RepositoryError(f"{command!r} in {repo}: no exit within {RUN_TIMEOUT_S} s") from None
    if out.returncode != 0:
        tail = (out.stderr or out.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise RepositoryError(f"{command!r} in {repo} exited with code {out.returncode}: {tail[0][:300]}")
    if csv_glob:
        if os.path.isabs(csv_glob):
            raise RepositoryError(
                f"--csv {csv_glob}: a glob inside the repository (relative), where each worktree has it"
            )
        found = sorted(repo.glob(csv_glob), key=lambda p: p.stat().st_mtime)
        if not found:
            raise RepositoryError(f"{command!r} in {repo}: no file matches --csv {csv_glob!r} after it ran")
        return found[-1]
    written = [p for p, m in _csvs(repo).items() if before.get(p) != m and m >= t0 - 1]
    if len(written) != 1:
        what = "no CSV file" if not written else f"{len(written)} CSV files ({', '.join(p.name for p in written[:4])})"
        raise RepositoryError(f"{command!r} in {repo} wrote {what}; name the one to read with --csv GLOB")
    return written[0]


def columns(table: pd.DataFrame, source: Path, time_column: str | None, class_by: list[str] | None) -> dict:
    """The error, time and config columns of the command's CSV, and the classes."""
    cols = [c for c in table.columns if not str(c).startswith("Unnamed:")]  # a pandas index, not a column
    errors = [c for c in cols if c.startswith("err_")]
    times = [c for c in cols if c.startswith("us_")]
    if not errors:
        raise RepositoryError(f"{source}: no err_* column (the error of each config, 0 when it is right)")
    if time_column is None:
        mine = [c for c in times if not set(re.split(r"[_\W]+", c[3:].lower())) & set(REFERENCE_WORDS)]
        if len(mine) != 1:
            raise RepositoryError(
                f"{source}: {len(mine)} us_* columns that are not a reference's ({', '.join(times) or 'none'}); "
                "name the kernel's with --time-column"
            )
        time_column = mine[0]
    elif time_column not in cols:
        raise RepositoryError(f"{source}: no column {time_column!r} (it has {', '.join(cols)})")
    configs = [c for c in cols if c not in errors and c not in times]
    if not configs:
        raise RepositoryError(f"{source}: no column names a config (every column is err_* or us_*)")
    if class_by is None:
        varying = sorted((table[c].nunique(), i, c) for i, c in enumerate(configs) if table[c].nunique() > 1)
        class_by = [varying[0][2]] if varying else configs[:1]
    missing = [c for c in class_by if c not in configs]
    if missing:
        raise RepositoryError(
            f"{source}: --class-by {', '.join(missing)} is not a config column ({', '.join(configs)})"
        )
    return {"error_columns": errors, "time_column": time_column, "config_columns": configs, "class_by": class_by}


def _tolerance(table: pd.DataFrame, errors: list[str]) -> float:
    """0 where v0's run had no error; else the power of ten above its largest (say so: edit it)."""
    worst = float(pd.to_numeric(table[errors].stack(), errors="coerce").abs().max() or 0.0)
    return 0.0 if not worst or worst != worst else float(10 ** math.ceil(math.log10(worst * 1.0001)))


KERNEL_MARKS = ("triton.jit", "__global__", "load_inline")


def _script(repo: Path, command: str) -> list[str]:
    """The command's own file in the repository (its script, ``python3 bench.py`` or ``./bench.sh``):
    fixed at v0's copy, unless it holds the kernel too (then every version would run v0's kernel)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return []
    files = [w for w in words if not os.path.isabs(w) and not w.startswith("-") and (repo / w).is_file()][:1]
    if files and any(m in (repo / files[0]).read_text(errors="replace") for m in KERNEL_MARKS):
        return []
    return [os.path.normpath(f) for f in files]


def _language(repo: Path) -> str:
    """triton when a tracked Python file uses triton.jit, else cuda (target.yaml's ``language``)."""
    for name in _git(repo, "ls-files", "*.py").splitlines()[:2000]:
        if "triton.jit" in (repo / name).read_text(errors="replace"):
            return "triton"
    return "cuda"


TARGET_HEAD = """# A kernel inside a git repository, judged at each version's commit by one fixed benchmark command
# (kopt init --repo, from one run of that command: edit what it guessed).
#   repository:    the git repository; versions are its commits (kernels/vN.yaml: commit or patch)
#   command:       run by the shell in each version's worktree; it writes the CSV below
#   csv:           where that CSV lands (a glob in the worktree)
#   error_columns: must be 0 (or within error_tolerance) on every row, or the version is incorrect
#   error_tolerance: 0 where v0's own run had no error, else the power of ten above its largest
#   time_column:   the kernel's time per config (us); the other us_* columns are not judged
#   config_columns: the columns that name a config; class_by: the classes, compared each on its own
#   fixed_paths:   the benchmark's own files, restored from v0 in every version (never the kernel's)
#   repeats:       runs of the command per version (the median per config)
"""


def init(
    dest: Path, repo: Path, command: str, *, csv_glob=None, time_column=None, class_by=None, check=None
) -> list[str]:
    """The workspace at ``dest`` (absent or empty): target.yaml and kernels/v0.yaml; what it inferred."""
    if dest.exists() and any(dest.iterdir()):
        raise RepositoryError(f"{dest}: exists and is not empty; kopt init writes a new workspace")
    repo = repo.resolve()
    if not (repo / ".git").exists():
        raise RepositoryError(f"{repo}: not a git repository (the versions are its commits)")
    head = _git(repo, "rev-parse", "HEAD")
    dirty = _git(repo, "status", "--porcelain", "--untracked-files=no")
    csv_path = run_once(repo, command, csv_glob)
    try:
        table = pd.read_csv(csv_path, skipinitialspace=True)
        table.columns = [str(c).strip() for c in table.columns]
    except (OSError, ValueError) as e:
        raise RepositoryError(f"{csv_path}: not a readable CSV ({e})") from None
    cols = columns(table, csv_path, time_column, class_by)
    fixed = _script(repo, command)
    doc = {
        "name": repo.name,
        "kind": "command",
        "repository": os.path.relpath(repo, dest.resolve()),
        "command": command,
        "csv": csv_glob or str(csv_path.relative_to(repo)),
        **cols,
        "error_tolerance": _tolerance(table, cols["error_columns"]),
        "repeats": 3,
        "fixed_paths": fixed,
        "language": _language(repo),
    }
    with staged(dest, check) as staging:
        (staging / "target.yaml").write_text(TARGET_HEAD + yaml.safe_dump(doc, sort_keys=False))
        (staging / "kernels" / "v0.yaml").write_text(f"commit: {head}\n")
    lines = [
        f"{dest}: a command target on {repo} ({len(table)} configs in {csv_path.relative_to(repo)})",
        f"  errors: {', '.join(cols['error_columns'])}; time: {cols['time_column']}; configs: "
        f"{', '.join(cols['config_columns'])}; classes by {', '.join(cols['class_by'])}",
        f"  v0: commit {head[:12]}; fixed at v0 in every version: {', '.join(fixed) or 'nothing (add the benchmark files)'}",
        f"  error tolerance: {doc['error_tolerance']:g} (v0's run: {'no error' if not doc['error_tolerance'] else 'errors below it'})",
    ]
    if dirty:
        lines.append("  note: the repository has uncommitted changes; v0 is the commit, without them")
    return lines
