"""(Named *_rule.py: scripts/ is on sys.path when Snakemake runs a script, and a scripts/bottleneck.py
shadowed the pandas accelerator of that name, scripts/profile.py the standard library module.)

Rule `profile`: unpack snakemake, call kopt.steps.profile.profile."""

from kopt.steps.common import one_line_faults, redirect_log
from kopt.steps.profile import profile
from kopt.workspace.provenance import check_made_from
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
with one_line_faults():
    i = snakemake.input
    check_made_from(i.correctness, ref=i.ref, target=i.target, kernel=i.kernel)
doc = profile(
    version=snakemake.wildcards.version,
    target=snakemake.input.target,
    kernel=snakemake.input.kernel,
    correctness_json=snakemake.input.correctness,
    out_dir=snakemake.output.profile,
    asm_dir=snakemake.output.asm,
    log=snakemake.log[0],
    settings=read_settings(snakemake.input.settings),
    builds=list(snakemake.input.builds),
)
print(
    f"{snakemake.wildcards.version}: profile {doc['status']} ({doc['backend']})"
    + (f": {doc['error']}" if doc["error"] else "")
)
