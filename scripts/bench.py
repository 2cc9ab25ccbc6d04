"""Rule `bench`: unpack snakemake, call kopt.steps.bench.bench."""

from kopt.steps.bench import bench
from kopt.steps.common import one_line_faults, redirect_log
from kopt.workspace.provenance import check_made_from
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
with one_line_faults():
    i = snakemake.input
    check_made_from(i.correctness, ref=i.ref, target=i.target, kernel=i.kernel)
df = bench(
    version=snakemake.wildcards.version,
    target=snakemake.input.target,
    kernel=snakemake.input.kernel,
    correctness_json=snakemake.input.correctness,
    out_csv=snakemake.output.csv,
    out_samples=snakemake.output.samples,
    out_meta=snakemake.output.meta,
    log=snakemake.log[0],
    params=read_settings(snakemake.input.settings),
    builds=list(snakemake.input.builds),
    hardware_json=snakemake.input.hardware,
)
print(df.to_string())
