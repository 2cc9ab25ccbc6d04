"""Rule `state`: results/state.json, the loop state and the next action (kopt.loop.state.record)."""

from pathlib import Path

from kopt.steps.common import redirect_log
from kopt.steps.compare import write_state

redirect_log(snakemake.log[0])
results = str(Path(snakemake.input.compare[0]).parents[1])
versions = [Path(p).parent.name for p in snakemake.input.compare]
drafts = [Path(p).stem for p in snakemake.input.drafts]
print(write_state(results, versions, drafts, snakemake.output.json, can_split=snakemake.params.can_split))
