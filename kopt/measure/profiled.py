"""Profiling, driven by the judge (trusted side): torch.profiler per-kernel times recorded in the
kernel's process (its own report, labelled so), and the NVTX-ranged call that a profiler wrapping
that process (Nsight Compute, rocprofv3) selects; every profiled call's outputs are checked by the
judge. One kernel process profiles every class of a version.

One config per config class is profiled: its largest (most bytes moved, else most elements).
"""

from __future__ import annotations

import math
from pathlib import Path

from kopt.measure.boundary import KernelProcess
from kopt.measure.timing import CallPlan, profiled_calls, timed_call
from kopt.measure.trial import Trial


def largest_per_class(ref, items: list[dict]) -> list[dict]:
    nbytes = getattr(ref, "bytes_moved", None)

    def size(it):
        if callable(nbytes):
            try:
                return float(nbytes(**it["config"]))
            except Exception:  # noqa: BLE001 - fall back to the element count
                pass
        return math.prod(v for v in it["config"].values() if isinstance(v, (int, float)) and not isinstance(v, bool))

    best: dict[str, dict] = {}
    for it in items:
        if it["class"] not in best or size(it) > size(best[it["class"]]):
            best[it["class"]] = it
    return list(best.values())


def _warmed_up(
    ref, proc: KernelProcess, item: dict, device: str, *, opts: dict, phase: str, max_sets: int = 1, calls: int = 3
):
    """A config's trial after ``calls`` warm-up calls (compilation; the first one checked), with L2 flushes."""
    trial = Trial(ref, proc, item, device=device, opts=opts, phase=phase, max_sets=max_sets)
    lab = CallPlan(device, flush_l2=True)
    for i in range(calls):
        timed_call(trial, lab, where=f"config {item['key']}, warm-up call", verify=i == 0)
    return trial, lab


def profile_class(
    ref, proc: KernelProcess, item: dict, device: str, raw_dir: Path, *, opts: dict, calls: int = 5, jit_names=()
) -> dict:
    """Per-kernel GPU times of ``calls`` checked calls under torch.profiler, after three warm-up
    calls. On the CPU the interpreter's wall time, which decides nothing and compiles nothing: as
    many calls as the CPU's timing makes (bench.cpu_warmup, bench.cpu_samples)."""
    cfg, cls = item["config"], item["class"]
    warmup = 3 if device == "cuda" else max(1, int(opts.get("cpu_warmup", 1)))
    if device != "cuda":
        calls = max(1, int(opts.get("cpu_samples", calls)))
    trial, lab = _warmed_up(ref, proc, item, device, opts=opts, phase="profile", max_sets=2, calls=warmup)
    rec = {"class": cls, "config": cfg, "key": item["key"]}
    if device == "cuda":
        name = f"torch_trace.{re_safe(cls)}.json"
        trace, samples = profiled_calls(trial, lab, calls, name, per_kernel=True, keep=raw_dir / name)
        kernels = trace.get("kernels") or []
        rec.update(
            backend="torch.profiler",
            raw=[name],
            kernels=kernels,
            gpu_us_per_call=sum(float(k["us_per_call"]) for k in kernels) or None,
            seeds=[x.seed for x in samples],
            clock="in-process",
        )
    else:
        wall = [timed_call(trial, lab, where=f"config {item['key']}, profiled call {i}") for i in range(calls)]
        rec = interpreted_class(item, [w.us for w in wall], [w.seed for w in wall], jit_names)
    return rec


def interpreted_class(item: dict, wall_us: list[float], seeds: list[int], jit_names=()) -> dict:
    """A class's profile on the CPU: the Triton interpreter's wall time per call of its config
    (``wall_us``, drawn with ``seeds``) and the kernels it ran (no profiler, no GPU)."""
    kernels = [
        {"name": f"{n} (Triton interpreter)", "kind": "interpreted", "calls": None, "mean_us": None, "us_per_call": None, "share": None}
        for n in jit_names
    ]  # fmt: skip
    return {
        "class": item["class"],
        "config": item["config"],
        "key": item["key"],
        "backend": "cpu-interpreter",
        "raw": [],
        "kernels": kernels,
        "wall_us_per_call": sum(wall_us) / len(wall_us),
        "gpu_us_per_call": None,
        "seeds": list(seeds),
        "note": "no GPU profiler on the CPU: wall time of the Triton interpreter, not GPU performance",
    }


def ranged_calls(ref, proc: KernelProcess, item: dict, device: str, *, opts: dict, warmup: int = 3) -> dict:
    """For a profiler that wraps the kernel's process (Nsight Compute, rocprofv3): warm-up calls,
    then one call on freshly drawn inputs inside the ranges ``kopt-profile`` / ``kopt-class <class>``,
    so the profiler selects these launches and tells the classes apart; the judge checks its outputs.

    The kernel's process gives back its allocator's cache first (kopt.inside.serve._nvtx): Nsight
    Compute saves the memory a replayed kernel can reach before its passes, and the
    decode-attention example's long class took 50 s per kernel under it."""
    from kopt.profilers.ncu import NVTX_RANGE, class_range

    trial, _ = _warmed_up(ref, proc, item, device, opts=opts, phase="ncu", calls=warmup)
    s, d = trial.prepare()
    where = f"config {item['key']}, profiled call"
    answer = trial.call(s, where=where, timed=False, nvtx=[NVTX_RANGE, class_range(item["class"])])
    trial.check_or_raise(s, d, answer, where)
    return {"class": item["class"], "config": item["config"], "key": item["key"], "seeds": [s.seed]}


def re_safe(s: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s)
