"""Rule `correctness`: unpack snakemake, call kopt.steps.correctness.correctness."""

from kopt.steps.common import one_line_faults, redirect_log
from kopt.steps.correctness import correctness
from kopt.workspace.provenance import check_made_from
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
with one_line_faults():
    check_made_from(snakemake.input.reference, ref=snakemake.input.ref, target=snakemake.input.target)
doc = correctness(
    version=snakemake.wildcards.version,
    target=snakemake.input.target,
    kernel=snakemake.input.kernel,
    out_json=snakemake.output.json,
    out_md=snakemake.output.md,
    log=snakemake.log[0],
    params=read_settings(snakemake.input.settings),
    builds=list(snakemake.input.builds),
)
print(f"{snakemake.wildcards.version}: correctness {doc['status']}" + (f": {doc['error']}" if doc["error"] else ""))
