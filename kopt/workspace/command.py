"""A target of kind ``command``: a kernel inside a git repository, judged at each version's commit
by one fixed benchmark command whose CSV holds error and time columns per config (the seed's own
flow: ``err_<impl>`` and ``us_<impl>``).

Pure: the spec read from target.yaml, and each version's source (a commit, or a patch on its
parent's), checked with one line naming the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kopt.workspace.target import WorkspaceError, validate


@dataclass(frozen=True)
class CommandSpec:
    repository: Path
    command: str
    csv: str
    time_column: str
    class_by: list[str]
    error_columns: list[str] | None  # None: every err_* column
    error_tolerance: float
    config_columns: list[str] | None  # None: every column that is not an error or time column
    kernel: str | None
    repeats: int
    fixed_paths: list[str]  # restored from v0's commit in every version's worktree
    language: str  # triton or cuda: which next directions apply


def load_spec(data: dict, file: Path) -> CommandSpec:
    """The command target in ``data`` (target.yaml's mapping), validated against its schema."""
    validate(data, "command_target.schema.yaml", file)
    repo = Path(data["repository"])
    repo = repo if repo.is_absolute() else (file.parent / repo)
    if not (repo / ".git").exists():
        raise WorkspaceError(f"{file}: repository: {repo} is not a git repository")
    return CommandSpec(
        repository=repo.resolve(),
        command=data["command"],
        csv=data["csv"],
        time_column=data["time_column"],
        class_by=list(data["class_by"]),
        error_columns=data.get("error_columns"),
        error_tolerance=float(data["error_tolerance"]),
        config_columns=data.get("config_columns"),
        kernel=data.get("kernel"),
        repeats=int(data["repeats"]),
        fixed_paths=list(data["fixed_paths"]),
        language=data["language"],
    )


@dataclass(frozen=True)
class Source:
    """Where a version's code comes from: a commit (sha or ref), or a patch applied on its parent's."""

    commit: str | None
    patch: Path | None
    parent: str | None


def version_source(meta: dict, meta_path: Path, n: int) -> Source:
    """kernels/vN.yaml's ``commit:`` or ``patch:`` (exactly one; v0 names a commit)."""
    commit, patch = meta.get("commit"), meta.get("patch")
    if (commit is None) == (patch is None):
        raise WorkspaceError(f"{meta_path}: give exactly one of commit: (a sha or ref) and patch: (vN.diff)")
    if patch is not None:
        if n == 0 or not meta.get("parent"):
            raise WorkspaceError(f"{meta_path}: patch: needs a parent: whose commit it applies to")
        path = meta_path.parent / patch
        if not path.is_file():
            raise WorkspaceError(f"{meta_path}: patch: {path} is missing")
        return Source(None, path, meta["parent"])
    return Source(str(commit), None, meta.get("parent"))
