"""A command target's version in its own git worktree (a commit, or a patch committed on its
parent's code, with the benchmark's fixed files restored from v0's commit), and runs of the fixed
command there under a time limit, one at a time per worktree. The user's checkout is never
touched: worktrees are detached and live under the results tree. Each problem is one line naming
the version's file and what git said.
"""

from __future__ import annotations

import fcntl
import glob
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from kopt.formats.repository import with_our_python
from kopt.steps.common import run_group
from kopt.workspace.command import CommandSpec, Source
from kopt.workspace.provenance import sha256_file


class CommandError(RuntimeError):
    """A version whose worktree cannot be made or whose command fails; one line."""


def git(repo: Path, *args: str, cwd: Path | None = None) -> str:
    """``git -C`` the repository (or ``cwd``, one of its worktrees); a failure is one line."""
    r = subprocess.run(["git", "-C", str(cwd or repo), *args], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise CommandError(f"git {' '.join(args[:2])}: {(r.stderr or r.stdout).strip().splitlines()[0]}")
    return r.stdout.strip()


KOPT_AUTHOR = ["-c", "user.name=kopt", "-c", "user.email=kopt@localhost"]


def make_worktree(repo: Path, dest: Path, source: Source, parent_commit: str | None, where: Path) -> dict:
    """A fresh detached worktree of ``repo`` at ``dest``: the source's commit, or the parent's
    commit with the patch applied and committed there (detached: no branch of yours moves), so a
    patch on a patched parent builds on the parent's code. Returns what was built (the commit the
    worktree is at, the base commit and the patch hash); ``where`` names the file a problem is
    reported against."""
    dest = dest.resolve()  # git -C repo would read a relative path inside the user's checkout
    if dest.exists():
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(dest)], capture_output=True)
    subprocess.run(["git", "-C", str(repo), "worktree", "prune"], capture_output=True)
    base = source.commit if source.commit is not None else parent_commit
    try:
        sha = git(repo, "rev-parse", "--verify", f"{base}^{{commit}}")
        git(repo, "worktree", "add", "--detach", str(dest), sha)
        if source.patch is not None:
            git(repo, "apply", "--whitespace=nowarn", "--index", str(source.patch.resolve()), cwd=dest)
            git(repo, *KOPT_AUTHOR, "commit", "-qm", f"kopt: {source.patch.name} on {sha[:12]}", cwd=dest)
    except CommandError as e:
        raise CommandError(f"{where}: {e}") from None
    if source.patch is None:
        return {"commit": sha, "worktree": str(dest)}
    head = git(repo, "rev-parse", "HEAD", cwd=dest)
    return {
        "commit": head,
        "base_commit": sha,
        "patch": str(source.patch),
        "patch_sha256": sha256_file(source.patch),
        "worktree": str(dest),
    }


def restore_fixed(repo: Path, worktree: Path, paths: list[str], baseline: str, where: Path) -> dict[str, str]:
    """The benchmark's own files (target.yaml's ``fixed_paths``) as v0's commit has them: a version
    may change the kernel, never its judge. Their sha256 after the restore, by path."""
    if not paths:
        return {}
    try:
        git(repo, "checkout", baseline, "--", *paths, cwd=worktree.resolve())
    except CommandError as e:
        raise CommandError(f"{where}: fixed_paths: {e}") from None
    return {p: sha256_file(worktree / p) for p in paths if (worktree / p).is_file()}


@dataclass
class Run:
    exit_code: int | None  # None: killed at the time limit
    seconds: float
    csv_files: list[Path]


def run_command(
    spec: CommandSpec, worktree: Path, log: Path, timeout_s: float, env: dict | None = None, prefix: str = ""
) -> Run:
    """The fixed command once, by the shell, in ``worktree`` (``prefix``: a profiler in front of it;
    ``env``: the gate's GPU binding); its output appended to ``log``. One run at a time per
    worktree (a lock beside it: bench and profile of one version may be scheduled together), and
    CSVs matching ``spec.csv`` from an earlier run are removed first, so a run that writes none has none.
    The Python environment that runs kernel-opt comes first on the command's PATH: its ``python3``
    is the one with torch and Triton, activated or not (``.venv/bin/snakemake``)."""
    env = with_our_python(env)
    with open(worktree.parent / "run.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        for old in glob.glob(str(worktree / spec.csv)):
            Path(old).unlink()
        t0 = time.perf_counter()
        with open(log, "a") as out:
            out.write(f"$ (cd {worktree} && {prefix}{spec.command})\n")
            out.flush()
            code = run_group(prefix + spec.command, cwd=worktree, out=out, timeout_s=timeout_s, env=env)
        files = sorted(Path(p) for p in glob.glob(str(worktree / spec.csv)))
        return Run(code, time.perf_counter() - t0, files)
