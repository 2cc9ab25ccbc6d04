"""Rule `reference`: unpack snakemake, call kopt.steps.check_reference."""

import sys

from kopt.settings import read as read_settings
from kopt.steps import check_reference, redirect_log
from kopt.workspace import WorkspaceError

redirect_log(snakemake.log[0])
try:
    doc = check_reference(
        target=snakemake.input.target,
        out_json=snakemake.output.json,
        log=snakemake.log[0],
        params=read_settings(snakemake.input.settings),
    )
except WorkspaceError as e:
    sys.__stderr__.write(f"kopt: {e}\n")
    raise SystemExit(1) from None
print(f"reference: {len(doc['configs'])} configs on {doc['device']}")
