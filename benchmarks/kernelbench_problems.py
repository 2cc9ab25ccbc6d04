"""Correctness and timing of the KernelBench-style workspaces (examples/kernelbench/) at their shapes.

    python benchmarks/kernelbench_problems.py [--out results/kernelbench] [--only gelu,argmax] [--no-bench]

Prints, per workspace: the gate's verdict, where and in what precision the reference ran, the input
pool, and (unless --no-bench) the median and profiler GPU time with the achieved rates. The same code
path as the graph's correctness and bench rules (kopt.steps), with the config's settings.
"""

import argparse
import json
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kopt.steps.bench import check_then_time  # noqa: E402

PROBLEMS = ("argmax", "gelu", "gemm_add_relu")


def run(name: str, out: Path, params: dict, bench: bool) -> None:
    ws = ROOT / "examples" / "kernelbench" / name
    kernel, target, d = str(ws / "kernels" / "v0.py"), str(ws / "target.yaml"), out / name
    corr, df = check_then_time(
        d, version="v0", target=target, kernel=kernel, log=str(d / "steps.log"), params=params, time=bench
    )
    print(f"== {name}: correctness {corr['status']}" + (f": {corr['error']}" if corr["error"] else ""))
    for c in corr["configs"]:
        print(
            f"   {c['key']}: {c['result']}, max_abs {c.get('max_abs', 0):.3g}, reference {json.dumps(c.get('reference'))}"
        )
        print(f"   outputs {json.dumps(c.get('outputs'))}")
    if not bench or corr["status"] != "pass":
        return
    print(df[["config_key", "status", "median_us", "profiler_us", "n_samples", "tflops", "gbps", "error"]].to_string())
    meta = json.loads((d / "bench.json").read_text())
    for key, rec in meta["inputs"]["per_config"].items():
        print(f"   {key}: pool {json.dumps(rec['pool'])}; L2 reset {json.dumps(rec.get('l2_persisting_reset'))}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="results/kernelbench")
    ap.add_argument("--only", default=",".join(PROBLEMS))
    ap.add_argument("--no-bench", action="store_true")
    a = ap.parse_args()
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    params = {k: cfg[k] for k in ("device", "timeout_s", "bench", "inputs", "gate")}
    for name in a.only.split(","):
        run(name, Path(a.out), params, not a.no_bench)


if __name__ == "__main__":
    main()
