"""Rule `reports`: unpack snakemake, call kopt.steps.report.reports."""

from kopt.steps.common import one_line_faults, redirect_log
from kopt.steps.report import reports
from kopt.workspace.provenance import check_made_from
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
i = snakemake.input
with one_line_faults():  # every figure from results made from the files in place now
    for comp, kernel in zip(i.compare, i.kernels, strict=True):
        check_made_from(comp, ref=i.ref, target=i.target, kernel=kernel)
    for made in i.baselines:
        if made.endswith(".json"):
            check_made_from(made, ref=i.ref, target=i.target)
files = reports(
    compares=list(i.compare),
    metas=list(i.meta),
    kernels=list(i.kernels),
    hardware=i.hardware,
    experience=i.experience,
    settings=read_settings(i.settings),
    out=dict(snakemake.output.items()),
)
print("rendered", snakemake.output, files)
