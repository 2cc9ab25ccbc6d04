import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import min_version, validate

min_version("9.0")

# The package lives next to this workflow; make it importable even when not pip-installed.
sys.path.insert(0, str(Path(workflow.basedir)))
import yaml

from kopt.analysis.registry import slug
from kopt.profilers.gpus import detect_gpu_cached
from kopt.workspace.commands import for_target, overrides, snakemake_command
from kopt.workspace.provenance import (
    kept_but_stale,
    owner_problem,
    workspace_id,
    write_owner,
)
from kopt.workspace.settings import changed as settings_changed
from kopt.workspace.settings import from_config as settings_from_config
from kopt.workspace.settings import torch_baselines
from kopt.workspace.target import (
    COMPILED,
    WorkspaceError,
    kernel_files,
    load_workspace,
    local_headers,
)


# found next to the workflow, so `snakemake -d DIR` (results under DIR) finds it too
configfile: str(Path(workflow.basedir) / "config" / "config.yaml")


try:
    validate(config, "../config/schemas/config.schema.yaml", set_default=True)
except WorkflowError as e:
    raise WorkflowError(
        f"kopt: config/config.yaml (or --config/--configfile): {e}"
    ) from None


def workspace_path(path):
    """A relative workspace path: from the working directory, else from the workflow's folder."""
    p = Path(path)
    if not p.is_absolute() and not p.exists() and (Path(workflow.basedir) / p).exists():
        return Path(workflow.basedir) / p
    return p


try:
    WS = load_workspace(workspace_path(config["workspace"]))
except WorkspaceError as e:
    raise WorkflowError(f"kopt: {e}") from None

WS_ID = workspace_id(WS.root)
VERSIONS = [v.name for v in WS.versions]
LAST = VERSIONS[-1]
for _draft in WS.drafts:
    logger.warning(
        f"kopt: {WS.root}/kernels/{_draft}.yaml: {_draft} is a draft (TODO fields): skipped until they are filled in"
    )


wildcard_constraints:
    version=r"v(0|[1-9][0-9]*)",


def ws_file(name):
    return str(WS.root / name)


# what versions are judged against: ref.py, or a command target's target.yaml (its fixed command)
REF = str(WS.ref)


def kernel_of(wildcards):
    return str(WS.version(wildcards.version).kernel)


def headers_of(wildcards):
    """The local headers ("x.cuh") the version's own CUDA/HIP source includes: a change rebuilds it."""
    kernel = WS.version(wildcards.version).kernel
    return [str(p) for p in local_headers(kernel)] if kernel.suffix in COMPILED else []


def meta_of(wildcards):
    return str(WS.version(wildcards.version).meta_path)


def sources_of(wildcards):
    """Every kernel file a version runs: its own, and for a dispatching version the routed ones."""
    return [str(p) for p in kernel_files(WS.version(wildcards.version).kernel)]


def builds_of(wildcards):
    """The build folders (made by the build rule) of the CUDA/HIP kernels a version runs; none for Triton."""
    return [
        f"results/{Path(p).stem}/build"
        for p in sources_of(wildcards)
        if Path(p).suffix in COMPILED
    ]


def command_sources(wildcards):
    """What a command target's version is built from: the patch file, the parent's build (a patch
    applies on its code) and v0's (whose commit has the fixed paths)."""
    v = WS.version(wildcards.version)
    out = {}
    if "patch" in v.meta and v.parent:
        out.update(
            patch=str(v.meta_path.parent / v.meta["patch"]),
            parent_build=f"results/{v.parent}/build",
        )
    if WS.command.fixed_paths and v.number > 0:
        out["baseline_build"] = "results/v0/build"
    return out


def resolved_commit(wildcards):
    """The commit a version's ref names now: a branch that moved rebuilds the version."""
    from kopt.steps.worktree import CommandError, git

    ref = WS.version(wildcards.version).meta.get("commit")
    if ref is None:
        return ""
    try:
        return git(WS.command.repository, "rev-parse", "--verify", f"{ref}^{{commit}}")
    except CommandError:
        return f"unresolved {ref}"


def recorded_files(wildcards):
    """What a version was made from: its kernel files, its metadata, a command version's patch,
    ref.py (or a command target's target.yaml) and target.yaml."""
    v = WS.version(wildcards.version)
    files = {*sources_of(wildcards), REF, ws_file("target.yaml")}
    if v.meta_path.is_file():
        files.add(str(v.meta_path))
    if v.meta.get("patch"):
        files.add(str(v.meta_path.parent / v.meta["patch"]))
    return sorted(files)


def parent_files(wildcards):
    """The parent's kernel (for the diff size)."""
    parent = WS.version(wildcards.version).parent
    return {} if parent is None else {"parent_kernel": str(WS.version(parent).kernel)}


def previous_compare(wildcards):
    """compare(vN) depends on compare(vN-1): the decision fold is a chain in the graph."""
    n = int(wildcards.version[1:])
    return {"prev": f"results/v{n - 1}/compare.json"} if n > 0 else {}


# The GPU whose ceilings the rooflines use: results/hardware/<gpu>.json, measured once per GPU.
GPU = (
    config["gpu"]
    if config["gpu"] != "auto"
    else (detect_gpu_cached(config["device"], ".snakemake/kopt-gpu.json") or "cpu")
)
HARDWARE_JSON = f"results/hardware/{slug(GPU)}.json"

# the torch baselines the reports compare with (config `baselines`): none for a command target
# (no ref.py to run)
BASELINE_FILES = (
    expand(
        "results/baselines/{impl}/{file}",
        impl=torch_baselines(config["baselines"], GPU),
        file=["bench.csv", "correctness.json"],
    )
    if WS.command is None
    else []
)

# The command that rebuilds a target of this workspace, as the reports and kopt print it.
_DEFAULTS = (
    yaml.safe_load(Path(workflow.basedir, "config", "config.yaml").read_text()) or {}
)
_elsewhere = Path.cwd().resolve() != Path(workflow.basedir).resolve()
_snakefile = str(Path(workflow.main_snakefile).resolve()) if _elsewhere else None
# The GPU registry (rule hardware's inputs) from the project's folder where that is the working
# folder: Snakemake records the set of inputs, and absolute paths made a moved or copied project
# rerun every version ("Set of input files has changed").
REGISTRY = sorted(
    str(p if _elsewhere else p.relative_to(workflow.basedir))
    for p in Path(workflow.basedir, "config", "hardware").glob("*.yaml")
)
_extra = overrides(config, _DEFAULTS)
COMMAND = snakemake_command(
    WS_ID,
    snakefile=_snakefile,
    folder=str(Path.cwd().resolve()) if _elsewhere else None,
    extra=_extra,
)

# Each rule reads its settings from results/settings/<name>.json, written by rule `settings`
# (see kopt/workspace/settings.py): nothing is written while this file is parsed.
SETTING_VALUES = settings_from_config(
    config, gpu=GPU, kernel_type=WS.name, command=COMMAND
)
SETTINGS = {name: f"results/settings/{name}.json" for name in SETTING_VALUES}


# Whose results tree this is: a tree made for another workspace is never mixed with this one.
_own_folder = snakemake_command(
    WS_ID, snakefile=_snakefile, folder=f"runs/{WS.root.name}", extra=_extra
)
_owner = owner_problem("results", WS.root, for_target(_own_folder, "<targets>"))
if _owner:
    raise WorkflowError(f"kopt: {_owner}")


_rebuilding = set()


def rebuild(path, why):
    """Have Snakemake rebuild ``path`` and everything made from it, the way it rebuilds an
    incomplete file (its DAG's forced files), and say why in one line. Raising instead would not
    stop the run: Snakemake ignores an input function's error for a job whose output exists.
    """
    workflow.dag.forcefiles.add(path)
    if path not in _rebuilding:
        _rebuilding.add(path)
        logger.warning(f"kopt: {why}: it will be rebuilt, with everything made from it")


def rebuilt_if_stale(result):
    """An input function of the job that makes ``result``. While the DAG is built, a result
    Snakemake would keep by its age although its recorded sha256 say it was made from other
    files than the ones in place now (the version's kernels, ref.py, target.yaml) is rebuilt.
    """

    def check(wildcards):
        version = getattr(wildcards, "version", None)
        kernel = WS.version(version).kernel if version else None
        stale = kept_but_stale(
            result.format(version=version),
            ref=WS.ref,
            target=WS.target,
            kernel=kernel,
        )
        if stale:
            rebuild(*stale)
        return []

    return check


def settings_in_effect(wildcards):
    """While the DAG is built: a settings file holding other values than this run's is rewritten,
    and everything made from it rebuilt, whatever --rerun-triggers say and whether or not
    .snakemake/ holds records of earlier runs."""
    path = SETTINGS[wildcards.name]
    if settings_changed(path, SETTING_VALUES[wildcards.name]):
        rebuild(path, f"{path} holds other settings than this run's")
    return []
