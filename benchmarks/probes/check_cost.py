"""Probe (issue 42, point 8): what one checked call of the bound's batches costs the judge, step by
step, on the softmax example's 262144x256 float32 config (no kernel process: the judge's own work,
with torch.softmax standing in for the kernel's output). Each step's median over REPS, synchronized.

    source benchmarks/gpu_env.sh; python3 benchmarks/probes/check_cost.py
"""

import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from kopt.measure import reference, verify  # noqa: E402
from kopt.measure.device import bytes_equal, poison  # noqa: E402
from kopt.measure.variants import load_reference  # noqa: E402

REPS = 10


def timed(fn):
    out = []
    for _ in range(REPS):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out)


def main() -> None:
    ref = load_reference(ROOT / "examples" / "softmax" / "ref.py")
    cfg = {"M": 262144, "N": 256, "dtype": "float32"}
    layout, d = reference.probe(ref, cfg, "cuda", 1)
    plan = reference.Placement("cuda", reference.FLOAT32)
    arena_x = torch.empty_like(d.inputs["x"])
    y = torch.softmax(d.inputs["x"], -1)
    spec = layout.spec("y")
    tol = {"atol": 1e-5, "rtol": 1e-5 + reference.FLOAT32_REFERENCE_RTOL}
    steps = {
        "draw (setup)": lambda: reference.draw(ref, cfg, 2, "cuda"),
        "place (copy)": lambda: arena_x.copy_(d.inputs["x"]),
        "poison": lambda: poison(torch.empty_like(y)),
        "outputs' copy": lambda: y.clone(),
        "inputs unchanged": lambda: bytes_equal(arena_x, d.inputs["x"]),
        "reference (float32)": lambda: reference.expected(ref, d.inputs, layout, plan),
        "compare": lambda: verify.compare(y, y, spec, tol, False),
    }
    total = 0.0
    for name, fn in steps.items():
        ms = timed(fn)
        total += ms
        print(f"{name:22s} {ms:7.3f} ms", flush=True)
    print(f"{'sum':22s} {total:7.3f} ms per checked call (x32 sets x16 batches = {total * 512 / 1e3:.1f} s a config)")


if __name__ == "__main__":
    main()
