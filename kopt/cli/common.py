"""What every kopt command shares: the workspace in use, its results tree's owner check, the
snakemake command that rebuilds its targets."""

from __future__ import annotations

from pathlib import Path

import yaml

from kopt.workspace.commands import from_results
from kopt.workspace.provenance import owner_problem
from kopt.workspace.target import WorkspaceError, load_workspace


def config_workspace() -> str:
    cfg = Path("config/config.yaml")
    if cfg.is_file():
        return (yaml.safe_load(cfg.read_text()) or {}).get("workspace", "examples/softmax")
    return "examples/softmax"


def owned(a):
    """The workspace, and the snakemake command of its results tree; refused when the tree
    belongs to another workspace."""
    ws = load_workspace(a.workspace)
    problem = owner_problem(a.results, ws.root)
    if problem:
        raise WorkspaceError(problem)
    return ws, from_results(a.workspace, a.results)
