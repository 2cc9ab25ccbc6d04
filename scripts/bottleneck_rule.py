"""(Named *_rule.py: scripts/ is on sys.path when Snakemake runs a script, and a scripts/bottleneck.py
shadowed the pandas accelerator of that name, scripts/profile.py the standard library module.)

Rule `bottleneck`: unpack snakemake, call kopt.steps.profile.bottleneck."""

from kopt.steps.common import redirect_log
from kopt.steps.profile import bottleneck
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
doc = bottleneck(
    version=snakemake.wildcards.version,
    profile_json=f"{snakemake.input.profile}/profile.json",
    bench_csv=snakemake.input.bench,
    hardware_json=snakemake.input.hardware,
    out_json=snakemake.output.json,
    settings=read_settings(snakemake.input.settings),
)
for c in doc["classes"]:
    print(f"{doc['version']} {c['class']}: {c['bottleneck']} ({c['evidence']}): {c['why']}")
