"""Probe (issue 42): the bound's spread between processes. The example's honest kernels (v1, and
v0) through the gate, the timing with its bound batches and Nsight Compute's clock, RUNS times
each, on two of the example's configs, with every default of config/config.yaml; per run and
config: the GPU time, the bound, its standard error within the run, and the median of each batch's
parts (the judge's placing, the rest, the judge's read). Which part moves between processes?

    source benchmarks/gpu_env.sh; python3 benchmarks/probes/bound_spread.py [RUNS]
"""

import json
import statistics
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.helpers import run_version  # noqa: E402

CONFIGS = [{"M": 262144, "N": 256, "dtype": "float32"}, {"M": 32768, "N": 2048, "dtype": "float32"}]


def main(runs: int) -> None:
    tmp = Path(tempfile.mkdtemp())
    ex = ROOT / "examples" / "softmax"
    ws = tmp / "ws"
    (ws / "kernels").mkdir(parents=True)
    (ws / "ref.py").write_text((ex / "ref.py").read_text())
    doc = yaml.safe_load((ex / "target.yaml").read_text())
    (ws / "target.yaml").write_text(yaml.safe_dump({**doc, "configs": CONFIGS}))
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    params = {"device": "auto", "timeout_s": 300, "bench": config["bench"], "inputs": config["inputs"]}
    for v in ("v1", "v0"):
        for i in range(runs if v == "v1" else max(1, runs // 2)):
            _, df, out = run_version(ws, ex / "kernels" / f"{v}.py", params, tmp / f"{v}-{i}")
            per = json.loads((out / "bench.json").read_text())["inputs"]["per_config"]
            for r in df.itertuples():
                b = per[r.config_key]["bound_batches"]
                med = {k: statistics.median(x[k] for x in b) for k in ("us", "judge_in_us", "judge_out_us")}
                rest = statistics.median(x["us"] - x["judge_in_us"] - x["judge_out_us"] for x in b)
                print(
                    f"{v} run {i} {r.config_key[:16]:16s} gpu {r.gpu_us:8.2f} bound {r.bound_us:8.2f} "
                    f"se {r.bound_se_us:5.2f} K {r.bound_calls:.0f} batches {len(b)}  in {med['judge_in_us']:7.2f} "
                    f"rest {rest:7.2f} out {med['judge_out_us']:6.2f}", flush=True,
                )  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4)
