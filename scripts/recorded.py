"""Rule `recorded`: keep the version's files by content (kopt.workspace.recorded.record)."""

from pathlib import Path

from kopt.workspace.recorded import record

out = snakemake.output[0]
m = record(out, Path(snakemake.input.workspace).parent, list(snakemake.input.files))
Path(snakemake.log[0]).parent.mkdir(parents=True, exist_ok=True)
Path(snakemake.log[0]).write_text(f"kept {len(m['files'])} files in {out}\n")
