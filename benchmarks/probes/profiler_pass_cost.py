"""What the bench's profiler pass costs on the GPU, per config: torch.profiler sessions of 16 and of
50 calls, split into the calls, the trace's export and its reading. Run from the repo root:

    python3 benchmarks/probes/profiler_pass_cost.py [examples/softmax] [v1]
"""

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
import torch  # noqa: E402
import yaml  # noqa: E402

from kopt.measure import timing  # noqa: E402
from kopt.measure.device import Guard  # noqa: E402
from kopt.measure.trial import Trial  # noqa: E402
from kopt.measure.variants import load_reference, load_variant  # noqa: E402
from kopt.profilers import torchtrace  # noqa: E402
from kopt.steps.common import config_items  # noqa: E402
from kopt.workspace.target import load_workspace  # noqa: E402


def main():
    ws_dir, version = (sys.argv[1:] + ["examples/softmax", "v1"])[:2]
    ws = load_workspace(ROOT / ws_dir)
    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    opts = {**cfg["bench"], **cfg["inputs"]}
    ref, kernel = load_reference(str(ws.ref)), load_variant(str(ws.version(version).kernel))
    item = config_items(ws, ws.configs)[-1]
    trial = Trial(ref, kernel, item, device="cuda", guard=Guard(), opts=opts, phase="bench", max_sets=8)
    lab = timing.Lab("cuda", True)
    for _ in range(5):
        timing.timed_call(trial, lab, where="warm-up")
    t = time.perf_counter()
    for _ in range(16):
        timing.timed_call(trial, lab, where="plain")
    plain = (time.perf_counter() - t) / 16
    print(f"{item['key']}: a timed call without the profiler {1e3 * plain:.1f} ms")
    real_load, spent = torchtrace.load, {}

    def load(path):
        t0 = time.perf_counter()
        out = real_load(path)
        spent["read"] = time.perf_counter() - t0
        spent["size_mb"] = Path(path).stat().st_size / 1e6
        return out

    torchtrace.load = load
    for n in (16, 50):
        t = time.perf_counter()
        trace, samples = timing.profiled_calls(trial, lab, n, "/tmp/probe_trace.json")
        total = time.perf_counter() - t
        t = time.perf_counter()
        torchtrace.per_call_us(trace, len(samples))
        parse = time.perf_counter() - t
        print(
            f"  {len(samples)} profiled calls: {total:.2f} s in all (trace read {spent['read']:.2f} s, "
            f"{spent['size_mb']:.1f} MB), per-call parse {parse:.2f} s"
        )
    torch.cuda.synchronize()


main()
