"""Probe (the bound's noise, issue 44's first point): the bound's spread per config over fresh runs.

tests/gpu/test_gpu_bound.py's honest copy: the softmax example's one-pass kernel at M=4096 x
N=4096 and 32768 x 2048 fp32, checked and timed ``--runs`` times by the tree this runs from (its
kopt, its tests' helpers and PARAMS), one judge each. Printed per run and config: Nsight Compute's
GPU time, the bound and its standard error (µs and 3 SE as % of the GPU time, the test's own
resolution line), and the batches' time per call. Run from a tree's root, that tree first on
PYTHONPATH:

    source benchmarks/gpu_env.sh; python3 benchmarks/probes/bound_spread_runs.py --runs 2
"""

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))

from tests.gpu.test_gpu_bound import PARAMS, SOFTMAX, _workspace  # noqa: E402
from tests.helpers import ROOT, run_version  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--label", default=str(Path.cwd()))
    a = ap.parse_args()
    ex = ROOT / "examples" / "softmax"
    tmp = Path(tempfile.mkdtemp(prefix="kopt-bound-runs-"))
    ws = _workspace(
        tmp / "softmax", (ex / "ref.py").read_text(), SOFTMAX, (ex / "kernels" / "v1.py").read_text(), ["N"]
    )
    for i in range(a.runs):
        t = time.perf_counter()
        corr, df, out = run_version(ws, ws / "kernels" / "v0.py", PARAMS, tmp / f"run{i}")
        wall = time.perf_counter() - t
        print(f"== {a.label} run {i}: {corr['status']} in {wall:.1f} s")
        batches = (
            json.loads((out / "bench.json").read_text())["inputs"]["per_config"]
            if (out / "bench.json").is_file()
            else {}
        )
        for r in df.itertuples():
            se_pct = 300 * r.bound_se_us / r.gpu_us if r.gpu_us == r.gpu_us and r.gpu_us else float("nan")
            us = [round(b["us"], 1) for b in (batches.get(r.config_key) or {}).get("bound_batches") or []]
            print(
                f"   {r.config_key}: gpu {r.gpu_us:.2f} us, bound {r.bound_us:.2f} +- {r.bound_se_us:.3f} us "
                f"(3 SE {se_pct:.2f}% of the GPU time), batches {us}"
            )


main()
