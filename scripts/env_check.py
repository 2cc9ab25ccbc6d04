"""Rule `env_check`: unpack snakemake, call kopt.steps.report.env_check."""

import json

from kopt.steps.common import redirect_log
from kopt.steps.report import env_check
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
env = env_check(
    settings=read_settings(snakemake.input.settings), out_json=snakemake.output.json, out_md=snakemake.output.md
)
print(json.dumps(env, indent=2))
