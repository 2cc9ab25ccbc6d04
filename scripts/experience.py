"""Rule `experience`: results/experience.sqlite from every comparison (kopt.loop.experience.build)."""

from kopt.loop.experience import build
from kopt.steps.common import redirect_log

redirect_log(snakemake.log[0])
print(build(snakemake.output.db, list(snakemake.input.compare), snakemake.input.imported or None))
