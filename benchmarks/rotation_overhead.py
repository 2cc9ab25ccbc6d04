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


def one_run(tree: Path, version: str, out: Path, pool_sets: int | None = None) -> pd.DataFrame:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tree), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "benchmarks/rerun_spread.py", "--version", version, "--runs", "1", "--out", str(out)]
    cmd += ["--pool-sets", str(pool_sets)] if pool_sets else []
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
    ap.add_argument("--pool-sets", default="", help="also run this harness with these pool sizes, e.g. 4,2")
    a = ap.parse_args()
    variants = {"old": (Path(a.old).resolve(), None), "new": (ROOT, None)}
    variants.update({f"new{n}": (ROOT, int(n)) for n in a.pool_sets.split(",") if n})
    trees = list(variants)
    runs: dict[str, list[pd.DataFrame]] = {name: [] for name in variants}
    for r in range(a.rounds):
        for name, (tree, sets) in variants.items():
            runs[name].append(one_run(tree, a.version, Path(a.out).resolve() / f"{name}{r}", sets))
            print(f"round {r} {name}: done", flush=True)

    def mean(name: str, col: str) -> pd.Series:
        return pd.concat([d[col] for d in runs[name]], axis=1).mean(axis=1)

    t = pd.DataFrame(
        {f"{n}_{c}": mean(n, col) for c, col in (("median_us", "median_us"), ("gpu_us", "profiler_us")) for n in trees}
    )
    for name in trees[1:]:
        t[f"{name}_median_change_pct"] = (t[f"{name}_median_us"] / t["old_median_us"] - 1) * 100
        t[f"{name}_gpu_change_pct"] = (t[f"{name}_gpu_us"] / t["old_gpu_us"] - 1) * 100
    print(f"{a.version}, mean over {a.rounds} round(s) of each harness:")
    print(t.to_string(float_format=lambda x: f"{x:.3f}"))
    for name in trees[1:]:
        print(
            f"{name}: largest |median change|: {t[f'{name}_median_change_pct'].abs().max():.3f}%; "
            f"largest |GPU-time change|: {t[f'{name}_gpu_change_pct'].abs().max():.3f}%"
        )
    for name in trees:
        print(f"{name}: each round's medians:\n" + pd.concat([d["median_us"] for d in runs[name]], axis=1).to_string())


if __name__ == "__main__":
    main()
