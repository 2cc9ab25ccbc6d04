"""What each rule does, one module per rule file whose rules do more than call one function (rules/<name>.smk -> kopt.steps.<name>; rules settings, experience and baseline call kopt.workspace.settings, kopt.loop.experience and the correctness and bench steps), as plain
functions of paths and settings; the scripts only unpack ``snakemake``.

Each step reads only its declared inputs and writes only its outputs, so rules can run as SLURM
jobs on other nodes. A misbehaving kernel never makes a step raise: it is recorded as
``failed``/``incorrect`` data, so the graph goes on with the other versions.
"""
