"""Rule `baseline`: check then time the reference as torch eager or torch.compile."""

from pathlib import Path

from kopt.steps.bench import check_then_time
from kopt.steps.common import one_line_faults, redirect_log
from kopt.workspace.provenance import check_made_from
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
with one_line_faults():
    check_made_from(snakemake.input.reference, ref=snakemake.input.ref, target=snakemake.input.target)
impl = snakemake.wildcards.impl
doc, df = check_then_time(
    Path(
        snakemake.output.correctness
    ).parent,  # every output of the rule lies there, named as check_then_time names them
    version=f"torch-{impl}",
    target=snakemake.input.target,
    kernel=snakemake.input.ref,
    impl=impl,
    log=snakemake.log[0],
    params=read_settings(snakemake.input.settings),
    hardware_json=snakemake.input.hardware,
)
print(f"torch {impl}: correctness {doc['status']}" + (f": {doc['error']}" if doc["error"] else ""))
print(df.to_string())
