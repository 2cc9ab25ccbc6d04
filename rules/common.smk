import sys
from pathlib import Path

from snakemake.exceptions import WorkflowError
from snakemake.utils import min_version, validate

min_version("9.0")

# The package lives next to this workflow; make it importable even when not pip-installed.
sys.path.insert(0, str(Path(workflow.basedir)))
from kopt.hardware import detect_gpu_cached, slug
from kopt.settings import write_if_changed
from kopt.workspace import WorkspaceError, load_workspace


configfile: "config/config.yaml"


try:
    validate(config, "../config/schemas/config.schema.yaml", set_default=True)
except WorkflowError as e:
    raise WorkflowError(
        f"kopt: config/config.yaml (or --config/--configfile): {e}"
    ) from None

try:
    WS = load_workspace(config["workspace"])
except WorkspaceError as e:
    raise WorkflowError(f"kopt: {e}") from None

VERSIONS = [v.name for v in WS.versions]
LAST = VERSIONS[-1]


wildcard_constraints:
    version=r"v(0|[1-9][0-9]*)",


def ws_file(name):
    return str(WS.root / name)


def kernel_of(wildcards):
    return str(WS.version(wildcards.version).kernel)


def meta_of(wildcards):
    return str(WS.version(wildcards.version).meta_path)


def sources_of(wildcards):
    """Every kernel file a version runs: its own, and for a dispatching version the routed ones."""
    out, todo = [], [wildcards.version]
    while todo:
        v = WS.version(todo.pop())
        out.append(str(v.kernel))
        todo += [r["use"] for r in v.routes]
    return sorted(set(out))


def parent_files(wildcards):
    """The parent's kernel (for the diff size) and bottleneck (for the experience log)."""
    parent = WS.version(wildcards.version).parent
    if parent is None:
        return {}
    return {
        "parent_kernel": str(WS.version(parent).kernel),
        "parent_bottleneck": f"results/{parent}/bottleneck.json",
    }


def previous_compare(wildcards):
    """compare(vN) depends on compare(vN-1): the decision fold is a chain in the graph."""
    n = int(wildcards.version[1:])
    return {"prev": f"results/v{n - 1}/compare.json"} if n > 0 else {}


# The GPU whose ceilings the rooflines use: results/hardware/<gpu>.json, measured once per GPU.
GPU = (
    config["gpu"]
    if config["gpu"] != "auto"
    else (detect_gpu_cached(config["device"], "results/settings/gpu.json") or "cpu")
)
HARDWARE_JSON = f"results/hardware/{slug(GPU)}.json"
REGISTRY = sorted(
    str(p) for p in Path(workflow.basedir, "config", "hardware").glob("*.yaml")
)

# Each rule reads its settings from a file it declares as input (see kopt/settings.py).
_run = {
    "device": config["device"],
    "timeout_s": config["timeout_s"],
    "gate": config["gate"],
    "inputs": config["inputs"],
}
SETTINGS = {
    name: write_if_changed(f"results/settings/{name}.json", value)
    for name, value in {
        "run": _run,
        "bench": {
            **_run,
            "bench": config["bench"],
            "ceiling_margin_pct": config["ceiling_margin_pct"],
        },
        "profile": {
            **_run,
            **config["profiler"],
            "profiler": config["profiler"]["backend"],
        },
        "hardware": {**_run, "gpu": GPU, "ceiling_runs": config["ceiling_runs"]},
        "bottleneck": {
            "target_fraction": config["roofline_target"],
            "experience_db": config["experience_db"],
            "kernel_type": WS.name,
        },
        "decide": {
            "noise_pct": config["noise_pct"],
            "trend_floor_pct": config["trend_floor_pct"],
            "experience_db": config["experience_db"],
            "max_consecutive_regressions": config["max_consecutive_regressions"],
            "review_speedup": config["review_speedup"],
        },
    }.items()
}
