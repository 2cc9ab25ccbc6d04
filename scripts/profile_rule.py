"""(Named *_rule.py: scripts/ is on sys.path when Snakemake runs a script, and a scripts/profile.py
shadowed the standard library module of that name.)

Rule `profile`: unpack snakemake, call kopt.steps.profile.profile_version."""

from kopt.steps.common import redirect_log
from kopt.steps.profile import profile_version
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
i, o = snakemake.input, snakemake.output
doc = profile_version(
    version=snakemake.wildcards.version,
    target=i.target,
    kernel=i.kernel,
    correctness_json=i.correctness,
    bench_json=i.bench_meta,
    out_dir=o.profile,
    asm_dir=o.asm,
    log=snakemake.log[0],
    settings=read_settings(i.settings),
    builds=list(i.builds),
)
print(f"{doc['version']}: profile {doc['status']} ({doc['backend']})" + (f": {doc['error']}" if doc["error"] else ""))
