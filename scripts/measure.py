"""Rule `measure`: unpack snakemake, call kopt.steps.measure.measure."""

from pathlib import Path

from kopt.steps.common import one_line_faults, redirect_log
from kopt.steps.measure import measure, since_start
from kopt.workspace.provenance import check_made_from
from kopt.workspace.settings import read as read_settings

redirect_log(snakemake.log[0])
i, o = snakemake.input, snakemake.output
with one_line_faults():
    check_made_from(i.reference, ref=i.ref, target=i.target)
version = snakemake.wildcards.version
m = measure(
    Path(o.correctness).parent,  # bench's outputs lie there, named as kopt.steps.bench names them
    version=version,
    target=i.target,
    kernel=i.kernel,
    log=snakemake.log[0],
    params=read_settings(i.settings),
    profile_settings=read_settings(i.profile_settings),
    hardware_json=i.hardware,
    builds=list(i.builds),
)
print(
    f"{version}: correctness {m.correctness['status']}"
    + (f": {m.correctness['error']}" if m.correctness["error"] else "")
)
print(m.bench.to_string())
m.timeline["printed"] = since_start()
print(
    f"{version}: rule measure's timeline (s since its process started): "
    + ", ".join(f"{k} {v:g}" for k, v in m.timeline.items())
)
