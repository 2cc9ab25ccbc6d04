"""Rerun one version's benchmark N times and print the spread of each config's median.

    python benchmarks/rerun_spread.py --version v0 --runs 3 [--workspace examples/softmax] [--out DIR]

The spread is (max - min) / min of the N medians, in %; the noise rule (1% by default) is only
meaningful when it is well under that. Uses the same code path as the first child of the graph's measure rule (each run checks, then times).
"""

import argparse
import json
import sys
from pathlib import Path

import pandas as pd
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kopt.steps.bench import check_then_time  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--version", default="v0")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--workspace", default="examples/softmax")
    ap.add_argument("--config", default="config/config.yaml")
    ap.add_argument("--out", default="results/spread")
    ap.add_argument("--pool-sets", type=int, default=None, help="override inputs.pool_sets (and min_pool_sets)")
    a = ap.parse_args()
    cfg = yaml.safe_load(Path(a.config).read_text())
    params = {
        "device": cfg.get("device", "auto"),
        "timeout_s": cfg.get("timeout_s", 300),
        "bench": cfg["bench"],
        "inputs": dict(cfg.get("inputs") or {}),
    }
    if a.pool_sets:
        params["inputs"].update(
            pool_sets=a.pool_sets, min_pool_sets=min(a.pool_sets, params["inputs"].get("min_pool_sets", 4))
        )
    ws, out = Path(a.workspace), Path(a.out) / a.version
    kernel = str(ws / "kernels" / f"{a.version}.py")
    medians, gpu = {}, {}
    for i in range(a.runs):
        d = out / f"run{i}"
        _, df = check_then_time(
            d, version=a.version, target=str(ws / "target.yaml"), kernel=kernel, log=str(d / "run.log"), params=params
        )
        medians[f"run{i}"] = df.set_index("config_key")["median_us"]
        gpu[f"run{i}"] = df.set_index("config_key")["profiler_us"]
        for r in df[df["status"] != "ok"].itertuples():
            print(f"run{i} {r.config_key}: {r.status}: {r.error}")
    t = pd.DataFrame(medians)
    t["spread_pct"] = (t.max(axis=1) / t.min(axis=1) - 1) * 100
    print(t.to_string(float_format=lambda x: f"{x:.3f}"))
    print(f"max spread over configs: {t['spread_pct'].max():.3f}%")
    g = pd.DataFrame(gpu).dropna(axis=1, how="all")
    if len(g.columns) >= 2:
        g["spread_pct"] = (g.max(axis=1) / g.min(axis=1) - 1) * 100
        print("profiler GPU time per call (the time that decides):")
        print(g.to_string(float_format=lambda x: f"{x:.3f}"))
        print(f"max GPU-time spread over configs: {g['spread_pct'].max():.3f}%")
    (out / "spread.json").write_text(json.dumps(t.reset_index().to_dict(orient="records"), indent=2) + "\n")


if __name__ == "__main__":
    main()
