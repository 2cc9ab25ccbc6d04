"""Probe: does ``gc.freeze()`` (kopt.inside.serve, once the kernel is imported) change a process's
Python pace? A loop of tensor views and dicts, the kind of host work a kernel's launches do, timed
with the collector off (as in a batch, kopt.measure.device.paused_gc), with and without the freeze;
and one full collection before and after it (what the judge's ``drop`` runs). CPU, any machine:

    python3 benchmarks/probes/gc_freeze_pace.py
"""

import gc
import subprocess
import sys
import time


def child(freeze: bool) -> None:
    import torch
    import triton  # noqa: F401 - its objects are what the collection walks

    x = torch.zeros(1 << 20)
    t = time.perf_counter()
    gc.collect()
    full_ms = (time.perf_counter() - t) * 1e3
    if freeze:
        gc.freeze()
    t = time.perf_counter()
    gc.collect()
    after_ms = (time.perf_counter() - t) * 1e3
    gc.disable()
    paces = []
    for _ in range(5):
        t, n = time.perf_counter(), 20000
        for i in range(n):
            v = x[: 1000 + 10 * (i % 7)].view(10, -1)
            d = {"x": v, "i": i}
            _ = d["x"].shape
        paces.append(round((time.perf_counter() - t) / n * 1e6, 2))
    print(f"freeze={freeze}: full collection {full_ms:.1f} ms, the next {after_ms:.1f} ms; us an iteration {paces}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        child(sys.argv[1] == "1")
    else:
        for freeze in ("0", "1", "0", "1"):
            subprocess.run([sys.executable, __file__, freeze], check=True)
