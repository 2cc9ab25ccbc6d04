"""Rule `reference`: unpack snakemake, call kopt.steps.correctness.check_reference."""

from kopt.steps.common import one_line_faults, redirect_log
from kopt.steps.correctness import check_reference
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
with one_line_faults():
    doc = check_reference(
        target=snakemake.input.target,
        out_json=snakemake.output.json,
        log=snakemake.log[0],
        params=read_settings(snakemake.input.settings),
    )
print(f"reference: {len(doc['configs'])} configs on {doc['device']}")
