"""Rule `experience`: results/experience.sqlite from every comparison (kopt.experience.build)."""

from kopt.experience import build
from kopt.steps import redirect_log

redirect_log(snakemake.log[0])
print(build(snakemake.output.db, list(snakemake.input.compare), snakemake.input.imported or None))
