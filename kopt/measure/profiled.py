"""Child-side profiling (imported in child processes only): torch.profiler per-kernel times,
compiled Triton kernel metadata and assembly, and the NVTX-ranged calls that a wrapping profiler
(Nsight Compute, rocprofv3) selects. One process profiles every class of a version.

One config per config class is profiled: its largest (most bytes moved, else most elements).
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

import torch

from kopt.measure.timing import Lab, profiled_calls, timed_call
from kopt.measure.trial import Trial
from kopt.profilers import torchtrace


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


def _jit_functions(kernel) -> list:
    """Triton JIT functions defined in (or imported into) the variant's module."""
    kinds = ("JITFunction", "InterpretedFunction")  # the latter under TRITON_INTERPRET=1
    found = []
    for obj in list(getattr(kernel, "__globals__", {}).values()):
        seen = 0
        while obj is not None and seen < 5:  # Autotuner / Heuristics wrap the JITFunction in .fn
            if type(obj).__name__ in kinds:
                found.append(obj)
                break
            obj, seen = getattr(obj, "fn", None), seen + 1
    return found


def triton_metadata(kernel, asm_dir: Path | None) -> list[dict]:
    """n_regs, n_spills, shared memory, num_warps, num_stages of every compiled specialisation;
    PTX / SASS (AMDGCN on AMD) written under ``asm_dir``."""
    out = []
    for fn in _jit_functions(kernel):
        caches = getattr(fn, "device_caches", {}) or {}
        for entry in caches.values():
            kernel_cache = entry[0] if isinstance(entry, tuple) else {}
            for i, ck in enumerate(kernel_cache.values()):
                with contextlib.suppress(Exception):  # metadata without handles is still useful
                    ck._init_handles()
                md = getattr(ck, "metadata", None)
                rec = {
                    "name": getattr(ck, "name", getattr(fn, "__name__", "?")),
                    "function": getattr(fn, "__name__", "?"),
                    "specialisation": i,
                    "n_regs": getattr(ck, "n_regs", None),
                    "n_spills": getattr(ck, "n_spills", None),
                    "shared_bytes": getattr(md, "shared", None),
                    "num_warps": getattr(md, "num_warps", None),
                    "num_stages": getattr(md, "num_stages", None),
                    "asm_files": [],
                }
                asm = getattr(ck, "asm", {}) or {}
                if asm_dir is not None:
                    asm_dir.mkdir(parents=True, exist_ok=True)
                    stem = f"{rec['function']}.{i}"
                    for key in ("ptx", "amdgcn", "ttgir"):
                        if isinstance(asm.get(key), str):
                            (asm_dir / f"{stem}.{key}").write_text(asm[key])
                            rec["asm_files"].append(f"{stem}.{key}")
                    sass = _sass(asm.get("cubin"))
                    if sass:
                        (asm_dir / f"{stem}.sass").write_text(sass)
                        rec["asm_files"].append(f"{stem}.sass")
                out.append(rec)
    return out


def _sass(cubin) -> str | None:
    if not isinstance(cubin, (bytes, bytearray)):
        return None
    try:
        from triton.tools.disasm import get_sass

        return get_sass(cubin)
    except Exception:  # noqa: BLE001 - needs cuobjdump; absent is fine
        return None


def _warmed_up(
    ref, kernel, item: dict, device: str, *, guard, opts: dict, phase: str, max_sets: int = 1, calls: int = 3
):
    """A config's trial after ``calls`` warm-up calls (compilation; the first one checked), with L2 flushes."""
    trial = Trial(ref, kernel, item, device=device, guard=guard, opts=opts, phase=phase, max_sets=max_sets)
    lab = Lab(device, flush_l2=True)
    for i in range(calls):
        timed_call(trial, lab, where=f"config {item['key']}, warm-up call", verify=i == 0)
    return trial, lab


def profile_class(ref, kernel, item: dict, device: str, raw_dir: Path, *, guard, opts: dict, calls: int = 5) -> dict:
    """Per-kernel GPU times of ``calls`` checked calls under torch.profiler (on the CPU: the
    interpreter's wall time), after three warm-up calls."""
    cfg, cls = item["config"], item["class"]
    trial, lab = _warmed_up(ref, kernel, item, device, guard=guard, opts=opts, phase="profile", max_sets=2)
    rec = {"class": cls, "config": cfg, "key": item["key"]}
    if device == "cuda":
        trace_path = raw_dir / f"torch_trace.{re_safe(cls)}.json"
        trace, samples = profiled_calls(trial, lab, calls, str(trace_path))
        seeds = [x.seed for x in samples]
        kernels = torchtrace.per_kernel(torchtrace.gpu_events(trace), len(seeds))
        rec.update(
            backend="torch.profiler",
            raw=[trace_path.name],
            kernels=kernels,
            gpu_us_per_call=sum(k["us_per_call"] for k in kernels) or None,
            seeds=seeds,
        )
    else:
        wall = [timed_call(trial, lab, where=f"config {item['key']}, profiled call {i}") for i in range(calls)]
        rec.update(
            backend="cpu-interpreter",
            raw=[],
            kernels=[
                {
                    "name": f"{getattr(f, '__name__', None) or getattr(getattr(f, 'fn', None), '__name__', '?')} (Triton interpreter)",
                    "kind": "interpreted",
                    "calls": None,
                    "mean_us": None,
                    "us_per_call": None,
                    "share": None,
                }
                for f in _jit_functions(kernel)
            ],
            wall_us_per_call=sum(w.us for w in wall) / calls,
            gpu_us_per_call=None,
            seeds=[w.seed for w in wall],
            note="no GPU profiler on the CPU: wall time of the Triton interpreter, not GPU performance",
        )
    return rec


def ranged_calls(ref, kernel, item: dict, device: str, *, guard, opts: dict, warmup: int = 3) -> dict:
    """For a profiler that wraps this process (Nsight Compute, rocprofv3): warm-up calls, then one
    call on freshly drawn inputs inside the ranges ``kopt-profile`` / ``kopt-class <class>``, so the
    profiler selects these launches and tells the classes apart.

    The memory the caching allocator keeps (earlier configs, the checks' float64 references) is
    given back first: Nsight Compute saves the memory a replayed kernel can reach before its
    passes, and the decode-attention example's long class took 50 s per kernel under it."""
    from kopt.profilers.ncu import NVTX_RANGE, class_range

    trial, lab = _warmed_up(ref, kernel, item, device, guard=guard, opts=opts, phase="ncu", calls=warmup)
    s = trial.prepare()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.nvtx.range_push(NVTX_RANGE)
    torch.cuda.nvtx.range_push(class_range(item["class"]))
    trial.call(s)
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    torch.cuda.nvtx.range_pop()
    return {"class": item["class"], "config": item["config"], "key": item["key"], "seeds": [s.seed]}


def re_safe(s: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "_", s)
