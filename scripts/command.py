"""Rules of rules/command.smk (a target of kind command): unpack snakemake, call kopt.steps.command."""

from kopt.steps import command
from kopt.steps.common import redirect_log
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
i, o, v = snakemake.input, snakemake.output, snakemake.wildcards.version
if snakemake.rule == "build":
    doc = command.build(
        version=v,
        target=i.target,
        meta=i.meta,
        parent_build=i.get("parent_build"),
        baseline_build=i.get("baseline_build"),
        out_dir=o.build,
    )
else:
    common = {"version": v, "target": i.target, "build": i.build, "log": snakemake.log[0]}
    settings = read_settings(i.settings)
    if snakemake.rule == "correctness":
        doc = command.correctness(**common, out_json=o.json, out_md=o.md, out_runs=o.runs, settings=settings)
    elif snakemake.rule == "bench":
        doc = command.bench(
            **common,
            correctness_json=i.correctness,
            out_csv=o.csv,
            out_samples=o.samples,
            out_meta=o.meta,
            out_runs=o.runs,
            settings=settings,
        )
    else:
        doc = command.profile(**common, correctness_json=i.correctness, out_dir=o.profile, settings=settings)
print(f"{v}: {snakemake.rule} done")
