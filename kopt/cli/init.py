"""kopt init DIR [--kernelbench FILE | --gpumode PROBLEM_DIR | --repo PATH --command CMD]: a workspace from what the user
has, or one to edit (kopt.formats)."""

from __future__ import annotations

from pathlib import Path


def cmd_init(a) -> int:
    if a.kernelbench:
        from kopt.formats import kernelbench_workspace

        lines = kernelbench_workspace.init(Path(a.dir), Path(a.kernelbench))
    elif a.gpumode:
        from kopt.formats import gpumode_workspace

        lines = gpumode_workspace.init(Path(a.dir), Path(a.gpumode))
    elif a.repo:
        from kopt.formats import repository

        if not a.command:
            raise repository.RepositoryError("kopt init --repo: name the benchmark command with --command")
        class_by = a.class_by.split(",") if a.class_by else None
        lines = repository.init(
            Path(a.dir), Path(a.repo), a.command, csv_glob=a.csv, time_column=a.time_column, class_by=class_by
        )
    else:
        from kopt.formats import skeleton

        lines = skeleton.init(Path(a.dir))
    for line in lines:
        print(line)
    return 0
