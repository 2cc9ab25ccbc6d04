"""What fresh inputs per call cost the measurement: one version's per-config medians under an older
harness (a snapshot of the repository, e.g. `git archive 7c46c5a kopt examples/softmax benchmarks
config | tar -x -C .old`) and under this one, alternating, in the same session.

    python benchmarks/rotation_overhead.py --old .old --version v1 --rounds 2

Each round runs `benchmarks/rerun_spread.py --runs 1` in each tree (its own kopt, example and
config). Prints per config the script median and the profiler GPU time of both, and new/old - 1.
The harness's own work (draws, reference, checks) is outside the timed region in both: what may
move is the kernel's time itself (e.g. buffers that change between calls).
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def one_run(tree: Path, version: str, out: Path) -> pd.DataFrame:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "benchmarks/rerun_spread.py", "--version", version, "--runs", "1", "--out", str(out)]
    p = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise SystemExit(f"{tree}: {' '.join(cmd)} failed:\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}")
    return pd.read_csv(out / version / "run0" / "bench.csv").set_index("config_key")[["median_us", "profiler_us"]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", default=".old")
    ap.add_argument("--version", default="v1")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", default="results/rotation")
    a = ap.parse_args()
    trees = {"old": Path(a.old).resolve(), "new": ROOT}
    runs: dict[str, list[pd.DataFrame]] = {"old": [], "new": []}
    for r in range(a.rounds):
        for name, tree in trees.items():
            runs[name].append(one_run(tree, a.version, Path(a.out).resolve() / f"{name}{r}"))
            print(f"round {r} {name}: done", flush=True)
    def mean(name: str, col: str) -> pd.Series:
        return pd.concat([d[col] for d in runs[name]], axis=1).mean(axis=1)

    t = pd.DataFrame({f"{n}_{c}": mean(n, col) for c, col in (("median_us", "median_us"), ("gpu_us", "profiler_us")) for n in trees})
    t["median_change_pct"] = (t["new_median_us"] / t["old_median_us"] - 1) * 100
    t["gpu_change_pct"] = (t["new_gpu_us"] / t["old_gpu_us"] - 1) * 100
    print(f"{a.version}, mean over {a.rounds} round(s) of each harness:")
    print(t.to_string(float_format=lambda x: f"{x:.3f}"))
    print(f"largest |median change|: {t['median_change_pct'].abs().max():.3f}%; "
          f"largest |GPU-time change|: {t['gpu_change_pct'].abs().max():.3f}%")
    for name in trees:
        print(f"{name}: each round's medians:\n" + pd.concat([d["median_us"] for d in runs[name]], axis=1).to_string())


if __name__ == "__main__":
    main()
