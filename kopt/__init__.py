"""kernel-opt: the logic behind the Snakemake experiment graph, grouped as the data flow.

    workspace -> profilers -> analysis -> loop -> measure -> report -> steps -> cli

Each package imports only the ones before it (tests/test_layers.py); only ``measure`` imports
torch, so the Snakefile's parse-time imports (workspace, profilers.gpus) stay cheap.
"""

__version__ = "0.1.0"
