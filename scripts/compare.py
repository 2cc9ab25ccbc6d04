"""Rule `compare`: unpack snakemake, call kopt.steps.compare.compare; the verdict goes to the
terminal the moment compare.json is written (the profiles and reports follow it)."""

import sys
from pathlib import Path

from kopt.report.verdicts import verdict_line
from kopt.steps.common import one_line_faults, redirect_log
from kopt.steps.compare import compare
from kopt.workspace.provenance import check_made_from
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
i = snakemake.input
with one_line_faults():  # a decision only from results made from the files in place now
    for made in (i.correctness, i.bench_meta):
        check_made_from(made, ref=i.ref, target=i.target, kernel=i.kernel)
    if i.get("prev"):
        check_made_from(i.prev, ref=i.ref, target=i.target)
comp = compare(
    version=snakemake.wildcards.version,
    target=snakemake.input.target,
    kernel=snakemake.input.kernel,
    meta_yaml=snakemake.input.meta,
    correctness_json=snakemake.input.correctness,
    bench_csv=snakemake.input.bench,
    parent=snakemake.params.parent,
    parent_kernel=snakemake.input.get("parent_kernel"),
    prev_compare=snakemake.input.get("prev"),
    out_json=snakemake.output.json,
    params=read_settings(snakemake.input.settings),
)
print(
    f"{comp['version']}: {comp['decision']} ({comp['reason']}): {comp.get('detail')}; best after: {comp['best_after']}"
)
print(verdict_line(Path(snakemake.output.json).parent.parent.resolve(), comp["version"], comp), file=sys.__stderr__)
