"""Rule `reports`: render performance.md, final_report.md, benchmark.md and the plots."""

from pathlib import Path

from kopt import report
from kopt.steps import redirect_log

redirect_log(snakemake.log[0])
versions = [Path(p).parent.name for p in snakemake.input.compare]
res = report.load(Path(snakemake.input.compare[0]).parent.parent, versions, snakemake.input.meta, snakemake.input.kernels)
files = report.plots(res, snakemake.output.plots)
Path(snakemake.output.performance).write_text(report.render_performance(res))
Path(snakemake.output.final).write_text(report.render_final(res, files))
Path(snakemake.output.benchmark).write_text(report.render_benchmark(res))
print("rendered", snakemake.output, files)
