"""Rules `env_check` and `reports` (rules/report.smk): what this machine is, and the reports
rendered from result files alone."""

from __future__ import annotations

import json
from pathlib import Path

from kopt.measure.environment import collect
from kopt.report import plots, tables
from kopt.report.render import render
from kopt.report.results import load


def env_check(*, settings: dict, out_json: str, out_md: str) -> dict:
    """results/env_check.{json,md}: GPU, driver, CUDA/ROCm, libraries, profilers, clocks."""
    env = collect(settings["device"])
    Path(out_json).write_text(json.dumps({**env, "provenance": {"settings": settings}}, indent=2))
    Path(out_md).write_text(render("env_check.md.j2", env=env))
    return env


def reports(
    *,
    compares: list[str],
    metas: list[str],
    kernels: list[str],
    hardware: str,
    experience: str,
    settings: dict,
    out: dict[str, str],
) -> list[str]:
    """performance.md, final_report.md, benchmark.md and the plots (``out`` names each file)."""
    versions = [Path(p).parent.name for p in compares]
    res = load(Path(compares[0]).parent.parent, versions, metas, kernels, hardware=hardware, settings=settings)
    res.command = settings["command"]
    files = plots.plots(res, out["plots"])
    recommended = tables.recommendations(res, experience, settings["kernel_type"])
    Path(out["performance"]).write_text(tables.render_performance(res, recommended))
    Path(out["final"]).write_text(tables.render_final(res, files))
    Path(out["benchmark"]).write_text(tables.render_benchmark(res))
    return files
