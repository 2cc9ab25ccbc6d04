"""kernel-opt: the logic behind the Snakemake experiment graph.

Pure modules (workspace, decide, stats, render, provenance hashing) import neither torch nor
subprocess, so they are fast to import at DAG-build time and easy to test. Modules that run
kernels (runner, child, correctness, timing, variants) are imported only inside rule jobs.
"""

__version__ = "0.1.0"
