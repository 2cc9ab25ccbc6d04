"""Rule `check_then_time`: unpack snakemake, call kopt.steps.bench.check_then_time."""

from pathlib import Path

from kopt.steps.bench import check_then_time
from kopt.steps.common import one_line_faults, redirect_log
from kopt.workspace.provenance import check_made_from
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
with one_line_faults():
    check_made_from(snakemake.input.reference, ref=snakemake.input.ref, target=snakemake.input.target)
version = snakemake.wildcards.version
doc, df = check_then_time(
    Path(snakemake.output.correctness).parent,  # every output lies there, named as check_then_time names them
    version=version,
    target=snakemake.input.target,
    kernel=snakemake.input.kernel,
    log=snakemake.log[0],
    params=read_settings(snakemake.input.settings),
    hardware_json=snakemake.input.hardware,
    builds=list(snakemake.input.builds),
)
print(f"{version}: correctness {doc['status']}" + (f": {doc['error']}" if doc["error"] else ""))
print(df.to_string())
