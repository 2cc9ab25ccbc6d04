"""Where one version's correctness, bench and clock time goes (GPU): rule measure's first child
task (check_then_time: the gate, the in-process timing and the bound, then Nsight Compute's clock)
run in this process with the judge's steps wrapped by timers (inclusive: a step's time holds the
wrapped steps it calls). Run from the repo root:

    python3 benchmarks/probes/bench_phases.py [examples/softmax] [v1]

BENCH_PHASES_TRACE_MS=50 also prints each wrapped step that took at least 50 ms, with its config.
"""

import os
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
from kopt.measure import bound, child, correctness, inputs, outside_clock, reference, timing, trial  # noqa: E402
from kopt.measure.boundary import KernelProcess  # noqa: E402
from kopt.steps.common import child_request  # noqa: E402
from kopt.workspace.target import load_workspace  # noqa: E402

SPENT: dict[str, float] = defaultdict(float)
COUNT: dict[str, int] = defaultdict(int)
LONGEST: dict[str, float] = defaultdict(float)


TRACE_MS = float(os.environ.get("BENCH_PHASES_TRACE_MS") or "inf")  # print each step at least this long


def _config_of(a, k) -> str:
    """The config key a wrapped step works on, where its arguments say (a Trial, or an item)."""
    for x in (*a, *k.values()):
        key = getattr(x, "key", None) or (x.get("key") if isinstance(x, dict) else None)
        if isinstance(x, dict) and "op" in x:  # an order to the kernel's process
            key = f"order {x['op']}, {x.get('where') or ''}"
        if isinstance(key, str):
            return key
    return "?"


def timed(module, name, label=None):
    real = getattr(module, name)

    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return real(*a, **k)
        finally:
            torch.cuda.synchronize()
            took = time.perf_counter() - t
            if took * 1e3 >= TRACE_MS:
                print(
                    f"   [{time.perf_counter() - T0:7.2f} s] {label or name} {1e3 * took:.1f} ms ({_config_of(a, k)})"
                )
            SPENT[label or name] += took
            COUNT[label or name] += 1
            LONGEST[label or name] = max(LONGEST[label or name], took)

    setattr(module, name, wrapper)


class Quiet:
    def start(self, *a):
        pass

    def record(self, *a):
        pass

    def device(self, *a):
        pass

    def phase(self, *a):
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
        (trial.Trial, "judged"),
        (trial.Trial, "outputs_now"),
        (trial.Trial, "_expected"),
        (trial.Trial, "expected_at"),
        (trial.Trial, "_pool"),
        (trial.Trial, "_pool_size"),
        (trial, "release_arena"),
        (reference, "probe"),
        (torch.cuda, "empty_cache"),
        (torch.cuda, "ipc_collect"),
        (inputs.Pool, "__init__"),
        (KernelProcess, "ask"),
        (reference, "place"),
        (bound, "_to_host"),
        (trial, "compare"),
        (inputs.Pool, "redraw"),
        (inputs.Pool, "poison"),
        (inputs.Pool, "draw"),
        (inputs.Pool, "place"),
        (bound, "one_batch"),
        (bound, "sample_points"),
        (bound, "_changed"),
        (trial.Trial, "_close_at"),
        (reference, "scrub"),
        (reference, "expected"),
        (timing, "timed_call"),
        (timing, "_samples"),
        (timing, "bench_config"),
        (timing, "bound_calls"),
        (bound, "_timed_batch"),
        (bound, "_check"),
        (outside_clock, "run_calls"),
        (outside_clock, "read_record"),
        (KernelProcess, "begin"),
        (KernelProcess, "finish"),
        (correctness, "check_config"),
    ]:
        if hasattr(mod, name):
            timed(mod, name, f"{getattr(mod, '__name__', mod)}.{name}")
    SPENT.clear()
    COUNT.clear()
    LONGEST.clear()
    t = time.perf_counter()
    proc = child._start_kernel("check_then_time", req)
    try:
        out = child.TASKS["check_then_time"](req, Quiet(), proc)
    finally:
        proc.end()
    total = time.perf_counter() - t
    ok = out["bench"] is not None
    print(
        f"== check_then_time: {total:.2f} s in this process, bench ran: {ok} (torch import + CUDA init before: {T_TORCH:.2f} s)"
    )
    for k in sorted(SPENT, key=lambda k: -SPENT[k]):
        each = f"{1e3 * SPENT[k] / COUNT[k]:8.2f} ms/call (longest {1e3 * LONGEST[k]:.1f})"
        print(f"   {k:45s} {SPENT[k]:8.2f} s  {COUNT[k]:6d} calls  {each}")


main()
