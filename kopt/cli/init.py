"""kopt init DIR [--kernelbench FILE | --gpumode PROBLEM_DIR | --repo PATH --command CMD]: a
workspace from what the user has, or one to edit (kopt.formats), checked by the workspace loader
before it is written: what the graph will read."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path


def _loads(folder: Path) -> None:
    from kopt.workspace.target import WorkspaceError, load_workspace

    try:
        load_workspace(folder)
    except WorkspaceError as e:
        raise ValueError(f"the workspace kopt init made is refused ({e}); nothing was written") from None


def cmd_init(a) -> int:
    dest = Path(a.dir)
    if a.kernelbench:
        from kopt.formats import kernelbench_workspace

        lines = kernelbench_workspace.init(dest, Path(a.kernelbench), check=_loads)
    elif a.gpumode:
        from kopt.formats import gpumode_workspace

        lines = gpumode_workspace.init(dest, Path(a.gpumode), check=_loads)
    elif a.repo:
        from kopt.formats import repository

        if not a.command:
            raise repository.RepositoryError("kopt init --repo: name the benchmark command with --command")
        class_by = a.class_by.split(",") if a.class_by else None
        lines = repository.init(
            dest, Path(a.repo), a.command, csv_glob=a.csv, time_column=a.time_column, class_by=class_by, check=_loads
        )
    else:
        from kopt.formats import skeleton

        lines = skeleton.init(dest, check=_loads)
    for line in [*lines, *next_steps(dest)]:
        print(line)
    return 0


def next_steps(dest: Path) -> list[str]:
    """What to run next, complete: the baseline through the graph first, then each new version
    (``kopt eval`` prints the verdict and the next step), from the folder that holds the Snakefile."""
    ws = dest.resolve()
    kopt = f"{shlex.quote(sys.executable)} -m kopt.cli"
    where = f"--workspace {shlex.quote(str(ws))} --results {shlex.quote(str(ws / 'results'))}"
    return [
        f"next, from {Path(__file__).resolve().parents[2]}:",
        f"  {kopt} eval v0 {where}   # v0 checked, timed, profiled: its verdict",
        f"  {kopt} new {where}   # the next version, from the best: edit it, then eval it",
        f"  {kopt} status {where}   # where the loop stands, what to try next",
    ]
