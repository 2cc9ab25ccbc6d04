"""Rule `correctness`: unpack snakemake, call kopt.steps.correctness."""

from kopt.settings import read as read_settings
from kopt.steps import correctness, redirect_log

redirect_log(snakemake.log[0])
doc = correctness(
    version=snakemake.wildcards.version,
    target=snakemake.input.target,
    kernel=snakemake.input.kernel,
    out_json=snakemake.output.json,
    out_md=snakemake.output.md,
    log=snakemake.log[0],
    params=read_settings(snakemake.input.settings),
)
print(f"{snakemake.wildcards.version}: correctness {doc['status']}" + (f": {doc['error']}" if doc["error"] else ""))
