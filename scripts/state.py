"""Rule `state`: results/state.json, the fold over every version (from the last comparison)."""

from kopt.steps.common import redirect_log
from kopt.steps.compare import write_state

redirect_log(snakemake.log[0])
print(write_state(snakemake.input.compare, snakemake.output.json))
