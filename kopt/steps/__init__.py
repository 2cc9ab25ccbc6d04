"""What each rule does, one module per rule file (rules/<name>.smk -> kopt.steps.<name>), as plain
functions of paths and settings; the scripts only unpack ``snakemake``.

Each step reads only its declared inputs and writes only its outputs, so rules can run as SLURM
jobs on other nodes. A misbehaving kernel never makes a step raise: it is recorded as
``failed``/``incorrect`` data, so the graph goes on with the other versions.
"""
