"""Rule `hardware`: unpack snakemake, call kopt.steps.hardware.hardware."""

from pathlib import Path

from kopt.steps.common import redirect_log
from kopt.steps.hardware import hardware
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
settings = read_settings(snakemake.input.settings)
doc = hardware(
    gpu=settings["gpu"],
    registry_dir=str(Path(snakemake.input.registry[0]).parent),
    out_json=snakemake.output.json,
    log=snakemake.log[0],
    settings=settings,
)
print(f"{doc['gpu']}: ceilings {doc['ceilings']}")
