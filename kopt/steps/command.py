"""The steps of a ``command`` target's version (kopt.workspace.command): its git worktree, built
from a commit or from a patch on its parent's, and runs of the fixed benchmark command there.

The user's checkout is never touched: every version gets its own worktree (``git worktree add
--detach``) under its results folder, made again from scratch when the version is rebuilt. Each
problem is one line naming the version's file and what git or the command said.
"""

from __future__ import annotations

import glob
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from kopt.workspace.command import CommandSpec, Source
from kopt.workspace.provenance import sha256_file


class CommandError(RuntimeError):
    """A version whose worktree cannot be made or whose command fails; one line."""


def _git(repo: Path, *args: str, cwd: Path | None = None) -> str:
    r = subprocess.run(["git", "-C", str(cwd or repo), *args], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise CommandError(f"git {' '.join(args[:2])}: {(r.stderr or r.stdout).strip().splitlines()[0]}")
    return r.stdout.strip()


def make_worktree(repo: Path, dest: Path, source: Source, parent_commit: str | None, where: Path) -> dict:
    """A fresh detached worktree of ``repo`` at ``dest``: the source's commit, or the parent's commit
    with the patch applied. Returns what was built (commit, patch hash); ``where`` names the file
    a problem is reported against."""
    if dest.exists():
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(dest)], capture_output=True)
    subprocess.run(["git", "-C", str(repo), "worktree", "prune"], capture_output=True)
    base = source.commit if source.commit is not None else parent_commit
    try:
        sha = _git(repo, "rev-parse", "--verify", f"{base}^{{commit}}")
        _git(repo, "worktree", "add", "--detach", str(dest), sha)
        if source.patch is not None:
            _git(repo, "apply", "--whitespace=nowarn", str(source.patch.resolve()), cwd=dest)
    except CommandError as e:
        raise CommandError(f"{where}: {e}") from None
    patch = {"patch": str(source.patch), "patch_sha256": sha256_file(source.patch)} if source.patch else {}
    return {"commit": sha, **patch, "worktree": str(dest)}


@dataclass
class Run:
    exit_code: int | None  # None: killed at the time limit
    seconds: float
    csv_files: list[Path]


def run_command(spec: CommandSpec, worktree: Path, log: Path, timeout_s: float) -> Run:
    """The fixed command once, by the shell, in ``worktree``; its output appended to ``log``. CSVs
    matching ``spec.csv`` from an earlier run are removed first, so a run that writes none has none."""
    for old in glob.glob(str(worktree / spec.csv)):
        Path(old).unlink()
    t0 = time.perf_counter()
    with open(log, "a") as out:
        out.write(f"$ (cd {worktree} && {spec.command})\n")
        out.flush()
        proc = subprocess.Popen(spec.command, shell=True, cwd=worktree, stdout=out, stderr=out, start_new_session=True)
        try:
            code: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            code = None
    files = sorted(Path(p) for p in glob.glob(str(worktree / spec.csv)))
    return Run(code, time.perf_counter() - t0, files)
