"""Settings files: the config values each rule depends on, as a file the rule declares as input.

Rule ``settings`` writes ``results/settings/<name>.json``. While the DAG is built, a settings
file that holds other values than this run's is forced (``rebuild`` in rules/common.smk), so
Snakemake rewrites it and reruns every job that reads it, whatever ``--rerun-triggers`` say and
without needing ``.snakemake/``'s records.
Nothing is written while the Snakefile is parsed, so a dry run with other settings
(``snakemake -n --config noise_pct=7``) changes no file a live run reads. Every result records
the settings it was made with (``provenance.settings``).
"""

from __future__ import annotations

import json
from pathlib import Path

NAMES = ("run", "build", "bench", "profile", "hardware", "bottleneck", "decide", "report")


def from_config(config: dict, *, gpu: str, kernel_type: str, command: str) -> dict[str, dict]:
    """Each rule's settings: only the config values that rule's results depend on."""
    run = {k: config[k] for k in ("device", "timeout_s", "gate", "inputs")}
    return {
        "run": run,
        "build": {"timeout_s": config["timeout_s"], "gpu": gpu, "build": config["build"]},
        "bench": {**run, "bench": config["bench"], "ceiling_margin_pct": config["ceiling_margin_pct"]},
        "profile": {**run, **config["profiler"], "profiler": config["profiler"]["backend"]},
        "hardware": {**run, "gpu": gpu, "ceiling_runs": config["ceiling_runs"]},
        "bottleneck": {"target_fraction": config["roofline_target"]},
        "decide": {
            k: config[k]
            for k in (
                "noise_pct",
                "noise_floor_us",
                "noise_se_z",
                "machine_spread_pct",
                "bound_share",
                "trend_floor_pct",
                "max_consecutive_regressions",
                "review_speedup",
            )
        },
        "report": {"command": command, "kernel_type": kernel_type, "target_fraction": config["roofline_target"]},
    }


def dumps(settings: dict) -> str:
    return json.dumps(settings, indent=1, sort_keys=True) + "\n"


def write(path: str | Path, settings: dict) -> None:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(dumps(settings))


def read(path: str | Path) -> dict:
    return json.loads(Path(path).read_text())


def changed(path: str | Path, settings: dict) -> bool:
    """Whether a settings file exists and holds other values than these."""
    try:
        return Path(path).read_text() != dumps(settings)
    except OSError:
        return False


def torch_baselines(setting: str | list[str], gpu: str) -> list[str]:
    """The torch baselines a graph runs (config ``baselines``): the list as given, or for ``auto``
    eager and compile where a GPU runs the graph and eager alone on the CPU interpreter
    (``gpu`` "cpu"), where torch.compile builds C++ for the CPU: 25 s of the bundled example's
    90-s first run on 2 cores, for a figure of the CPU's that says nothing of a GPU."""
    if setting != "auto":
        return list(setting)
    return ["eager"] if gpu == "cpu" else ["eager", "compile"]
