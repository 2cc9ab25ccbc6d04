"""kopt init DIR --kernelbench FILE: a workspace from what the user has (kopt.formats)."""

from __future__ import annotations

from pathlib import Path


def cmd_init(a) -> int:
    from kopt.formats import kernelbench_workspace

    for line in kernelbench_workspace.init(Path(a.dir), Path(a.kernelbench)):
        print(line)
    return 0
