"""Rule `env_check`: describe this machine (results/env_check.{json,md})."""

import json

from kopt.envcheck import collect
from kopt.render import render
from kopt.settings import read as read_settings
from kopt.steps import redirect_log

redirect_log(snakemake.log[0])
settings = read_settings(snakemake.input.settings)
env = collect(settings["device"])
with open(snakemake.output.json, "w") as f:
    json.dump({**env, "provenance": {"settings": settings}}, f, indent=2)
with open(snakemake.output.md, "w") as f:
    f.write(render("env_check.md.j2", env=env))
print(json.dumps(env, indent=2))
