"""Where one version's correctness and bench time goes (GPU): the child tasks run in this process
with their phases wrapped by timers. Run from the repo root:

    python3 benchmarks/probes/bench_phases.py [examples/softmax] [v1]
"""

import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
T0 = time.perf_counter()
import torch  # noqa: E402

torch.cuda.init()
T_TORCH = time.perf_counter() - T0
from kopt.measure import child, correctness, timing, trial  # noqa: E402
from kopt.steps.common import child_request  # noqa: E402
from kopt.workspace.target import load_workspace  # noqa: E402

SPENT: dict[str, float] = defaultdict(float)
COUNT: dict[str, int] = defaultdict(int)


def timed(module, name, label=None):
    real = getattr(module, name)

    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            torch.cuda.synchronize()
            SPENT[label or name] += time.perf_counter() - t
            COUNT[label or name] += 1

    setattr(module, name, wrapper)


class Quiet:
    def start(self, *a):
        pass

    def record(self, *a):
        pass

    def device(self, *a):
        pass


def main():
    ws_dir, version = (sys.argv[1:] + ["examples/softmax", "v1"])[:2] if len(sys.argv) < 3 else sys.argv[1:3]
    ws = load_workspace(ROOT / ws_dir)
    import yaml

    cfg = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    params = {"device": "cuda", "bench": cfg["bench"], "inputs": cfg["inputs"]}
    req = child_request(ws, str(ws.version(version).kernel), params)
    for mod, name in [
        (trial.Trial, "__init__"),
        (trial.Trial, "prepare"),
        (trial.Trial, "call"),
        (trial.Trial, "check"),
        (timing, "timed_call"),
        (timing, "_sample_count"),
        (timing, "_samples"),
        (timing, "_profiler_record"),
        (timing, "_null_event_us"),
        (timing, "profiled_calls"),
        (timing, "_profiled_sessions"),
        (correctness, "check_config"),
    ]:
        if hasattr(mod, name):
            timed(mod, name, f"{getattr(mod, '__name__', mod)}.{name}")
    for task in ("correctness", "bench"):
        SPENT.clear()
        COUNT.clear()
        t = time.perf_counter()
        child.TASKS[task](req, Quiet())
        total = time.perf_counter() - t
        print(f"== {task}: {total:.2f} s in this process (torch import + CUDA init before: {T_TORCH:.2f} s)")
        for k in sorted(SPENT, key=lambda k: -SPENT[k]):
            print(f"   {k:45s} {SPENT[k]:8.2f} s  {COUNT[k]:6d} calls  {1e3 * SPENT[k] / COUNT[k]:8.2f} ms/call")


main()
