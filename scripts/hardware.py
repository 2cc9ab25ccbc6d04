"""Rule `hardware`: unpack snakemake, call kopt.analysis.hardware."""

from pathlib import Path

from kopt.analysis import hardware
from kopt.settings import read as read_settings
from kopt.steps import redirect_log

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
