"""The bound's columns of bench.csv files: per config the GPU time, the bound, its standard error
and the unseen time (bound - GPU), all µs per call.

    python3 benchmarks/probes/bound_cols.py results/v*/bench.csv
"""

import sys

import pandas as pd

COLUMNS = ["config_key", "gpu_us", "bound_us", "bound_se_us", "unseen_us", "bound_calls", "clock_wall_us"]

for path in sys.argv[1:]:
    d = pd.read_csv(path)
    d["unseen_us"] = d.bound_us - d.gpu_us
    print(path)
    print(d[COLUMNS].to_string())
