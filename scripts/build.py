"""Rule `build`: unpack snakemake, call kopt.steps.build.build."""

from kopt.steps.build import build
from kopt.steps.common import redirect_log
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
doc = build(
    version=snakemake.wildcards.version,
    kernel=snakemake.input.kernel,
    out_dir=snakemake.output.build,
    settings=read_settings(snakemake.input.settings),
)
print(f"{doc['version']}: build {doc['status']}" + (f": {doc['error']}" if doc["error"] else ""))
