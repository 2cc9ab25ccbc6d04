"""Rule `baseline`: check then time the reference as torch eager or torch.compile."""

from kopt.steps.bench import bench
from kopt.steps.common import one_line_faults, redirect_log
from kopt.steps.correctness import correctness
from kopt.workspace.provenance import check_made_from
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
with one_line_faults():
    check_made_from(snakemake.input.reference, ref=snakemake.input.ref, target=snakemake.input.target)
impl, out = snakemake.wildcards.impl, snakemake.output
settings = read_settings(snakemake.input.settings)
common = dict(version=f"torch-{impl}", target=snakemake.input.target, kernel=snakemake.input.ref, impl=impl)
doc = correctness(**common, out_json=out.correctness, out_md=out.correctness_md, log=snakemake.log[0], params=settings)
print(f"torch {impl}: correctness {doc['status']}" + (f": {doc['error']}" if doc["error"] else ""))
df = bench(
    **common,
    correctness_json=out.correctness,
    out_csv=out.csv,
    out_samples=out.samples,
    out_meta=out.meta,
    log=snakemake.log[0],
    params=settings,
    hardware_json=snakemake.input.hardware,
)
print(df.to_string())
