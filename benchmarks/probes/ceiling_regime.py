"""The measured ceilings timed two ways, alternated: back to back (as before) and the way the
kernels are timed (L2 flush and spin before every call). Prints the medians per round.

    PYTHONPATH=$PWD python3 benchmarks/probes/ceiling_regime.py [rounds]
"""

import sys

from kopt.measure.ceilings import measure_ceilings

for r in range(int(sys.argv[1]) if len(sys.argv) > 1 else 2):
    for flushed in (False, True):
        m = measure_ceilings("cuda", 10, flushed=flushed)
        rates = {k: round(v["tflops"], 1) for k, v in m["matmul"].items() if v.get("tflops")}
        print(f"round {r} {m['timing']:>30}: copy {m['copy']['gbps']:.1f} GB/s, matmul TFLOP/s {rates}", flush=True)
