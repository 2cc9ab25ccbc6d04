"""Rule `reports`: render performance.md, final_report.md, benchmark.md and the plots."""

from pathlib import Path

from kopt import report
from kopt.provenance import check_made_from
from kopt.settings import read as read_settings
from kopt.steps import one_line_faults, redirect_log

redirect_log(snakemake.log[0])
i = snakemake.input
with one_line_faults():  # every figure from results made from the files in place now
    for comp, kernel in zip(i.compare, i.kernels):
        check_made_from(comp, ref=i.ref, target=i.target, kernel=kernel)
    for made in i.baselines:
        if made.endswith(".json"):
            check_made_from(made, ref=i.ref, target=i.target)
versions = [Path(p).parent.name for p in snakemake.input.compare]
res = report.load(
    Path(snakemake.input.compare[0]).parent.parent, versions, snakemake.input.meta, snakemake.input.kernels,
    hardware=snakemake.input.hardware,
)
settings = read_settings(snakemake.input.settings)
res.command = settings["command"]
files = report.plots(res, snakemake.output.plots)
recommended = report.recommendations(res, snakemake.input.experience, settings["kernel_type"])
Path(snakemake.output.performance).write_text(report.render_performance(res, recommended))
Path(snakemake.output.final).write_text(report.render_final(res, files))
Path(snakemake.output.benchmark).write_text(report.render_benchmark(res))
print("rendered", snakemake.output, files)
