"""Probe (trust: docs/threat_model.md, "Not covered"): how far Nsight Compute's GPU time of one
kernel moves between processes of one machine start, and what moves it.

The fold's threshold takes three standard errors of Nsight Compute's calls (Student's t) to
cover what two processes of one kernel read apart; recorded pairs of the honest version and its
copy read at most 1.0% apart at the 4096x4096 config of tests/gpu/test_gpu_clock.py (H100, H200),
a handful of runs each. Here the honest kernel of that test (the softmax example's v1 on
tiny's configs and LONG, the test's PARAMS, ``--clock-calls`` calls clocked) is checked and timed
``--runs`` times by the tree this runs from, one judge each, resting ``--rest-s`` seconds before
every ``--rest-every``-th run (does a run after idle read slower?). Per run and config: Nsight
Compute's GPU time and standard error; per run: the GPU's SM and memory clocks, temperature and
power sampled every 0.2 s (nvidia-smi, kopt.profilers.gpus) while it ran. At the end, per
config: the runs' range and standard deviation against their median standard error, and the
pairs of runs the fold's noise rule would call apart.

    source benchmarks/gpu_env.sh; timeout -s INT -k 10 400 python3 benchmarks/probes/clock_process_spread.py --runs 12
"""

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path.cwd()))

from kopt.loop.decide import Params, class_noise  # noqa: E402
from kopt.profilers import gpus  # noqa: E402
from tests.gpu.test_gpu_clock import PARAMS, clock_workspace  # noqa: E402
from tests.helpers import run_version  # noqa: E402

FIELDS = ["clocks.sm", "clocks.mem", "temperature.gpu", "power.draw"]


class Sampler:
    """The GPU's clocks, temperature and power every 0.2 s while a run lasts."""

    def __init__(self):
        self.rows, self.done = [], threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        while not self.done.wait(0.2):
            d = gpus.query_gpu(FIELDS)
            if d:
                self.rows.append([_num(d.get(f)) for f in FIELDS])

    def stop(self) -> str:
        self.done.set()
        self.thread.join()
        cols = list(zip(*self.rows, strict=True)) if self.rows else []
        parts = []
        for name, col in zip(("sm MHz", "mem MHz", "temp C", "power W"), cols, strict=False):
            xs = [x for x in col if x is not None]
            if xs:
                parts.append(f"{name} {min(xs):.0f}/{statistics.median(xs):.0f}/{max(xs):.0f}")
        return "min/median/max: " + ", ".join(parts) if parts else "no GPU readings"


def _num(text: str | None) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _us(x) -> str:
    return f"{x:.3f}" if _real(x) else "n/a"


def _real(x) -> bool:
    return isinstance(x, float) and x == x


def summary(runs: list[dict], calls: int) -> None:
    """Per config: the runs' spread against their errors, and the pairs the noise rule calls apart
    (its threshold as the fold's: Student's t for ``calls`` calls a side)."""
    params = Params()
    for key in runs[0]:
        timed = [r for r in runs if key in r and _real(r[key][0]) and _real(r[key][1])]
        us, se = [r[key][0] for r in timed], [r[key][1] for r in timed]
        if len(us) < 2:
            print(f"   {key}: fewer than two runs with Nsight Compute's time and its error")
            continue
        apart, n = 0, {key: calls}
        pairs = [(a, b) for i, a in enumerate(timed) for b in timed[i + 1 :]]
        for a, b in pairs:
            noise, _ = class_noise(
                params, [key], {key: a[key][0]}, {key: a[key][1]}, {key: b[key][0]}, {key: b[key][1]}, n, n
            )
            apart += abs(100 * (b[key][0] / a[key][0] - 1)) >= noise
        print(
            f"   {key}: {min(us):.2f}-{max(us):.2f} us ({100 * (max(us) / min(us) - 1):.1f}% apart), "
            f"sd {statistics.stdev(us):.3f} us against a median standard error of {statistics.median(se):.3f} us; "
            f"{apart} of {len(pairs)} pairs of runs beyond the noise rule"
        )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--rest-every", type=int, default=4)
    ap.add_argument("--rest-s", type=float, default=30.0)
    ap.add_argument("--clock-calls", type=int, default=PARAMS["bench"]["clock_calls"])
    a = ap.parse_args()
    params = {**PARAMS, "bench": {**PARAMS["bench"], "clock_calls": a.clock_calls}}
    tmp = Path(tempfile.mkdtemp(prefix="kopt-clock-spread-"))
    ws, runs = clock_workspace(tmp), []
    for i in range(a.runs):
        if i and a.rest_every and i % a.rest_every == 0:
            print(f"   (resting {a.rest_s:.0f} s)", flush=True)
            time.sleep(a.rest_s)
        sampler, t = Sampler(), time.perf_counter()
        corr, df, _ = run_version(ws, ws / "kernels" / "v0.py", params, tmp / f"run{i}")
        print(f"== run {i}: {corr['status']} in {time.perf_counter() - t:.1f} s; {sampler.stop()}", flush=True)
        runs.append({r.config_key: (r.gpu_us, r.gpu_se_us) for r in df.itertuples()})
        for r in df.itertuples():
            print(f"   {r.config_key}: gpu {_us(r.gpu_us)} +- {_us(r.gpu_se_us)} us ({r.status})", flush=True)
    print(f"== over {a.runs} runs, {a.clock_calls} calls clocked each")
    summary(runs, a.clock_calls)


main()
