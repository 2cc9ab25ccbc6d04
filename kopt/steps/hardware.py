"""Rule `hardware` (rules/hardware.smk): the measured ceilings of this GPU next to the cited
registry figures, once per GPU."""

from __future__ import annotations

from pathlib import Path

from kopt.analysis import registry as hw
from kopt.measure.runner import run_gated
from kopt.steps.common import write_json
from kopt.workspace.provenance import now


class HardwareMismatch(RuntimeError):
    pass


def hardware(*, gpu: str, registry_dir: str, out_json: str, log: str, settings: dict) -> dict:
    """Measure the ceilings of the GPU this job runs on (once per GPU; reused by every version)."""
    registry = hw.load_registry(registry_dir)
    outcome = run_gated(
        "hardware",
        {"device": settings["device"], "runs": settings["ceiling_runs"]},
        settings,
        timeout_s=settings["timeout_s"],
        log_path=log,
    )
    res = outcome.result or {}
    env = res.get("env") or {}
    name = env.get("gpu") or "cpu"
    if outcome.ok and hw.slug(name) != hw.slug(gpu):
        raise HardwareMismatch(
            f"this job runs on '{name}' but the workflow was planned for '{gpu}' "
            f"(results/hardware/{hw.slug(gpu)}.json): set `gpu:` in the config to the GPU the jobs run on"
        )
    entry = hw.match(name, registry) if name != "cpu" else None
    measured = res.get("measured")
    doc = {
        "gpu": name,
        "slug": hw.slug(gpu),
        "device": res.get("device") or settings["device"],
        "registry": {"name": entry["name"], "file": Path(entry["file"]).name, "figures": entry["figures"]}
        if entry
        else None,
        "registry_note": None
        if entry or name == "cpu"
        else f"'{name}' is not in config/hardware/: measured ceilings only",
        "measured": measured,
        "measure_error": None if outcome.ok else outcome.error,
        "ceilings": hw.ceilings(measured, entry),
        "note": "CPU figures: Triton-interpreter runs are judged against the CPU's own copy/matmul rates"
        if name == "cpu"
        else None,
        "provenance": {"created": now(), "env": env, "settings": settings, "gate": outcome.gate},
    }
    write_json(out_json, doc)
    return doc
