"""A gpu-mode problem's own float outputs against their float64 run at the benchmarks' sizes, on
the GPU at init (trusted side: the problem's own ``ref_kernel``, never a kernel). gpu-mode's eval
compares a submission with ``ref_kernel`` run on the same GPU at the data's own dtypes; kernel-opt
compares with a float64 run. On an H200 the problems' own submissions then failed their gate where
float32 or bfloat16 cannot meet the problem's tolerance against float64 at those sizes: pmpp's
conv2d (1 of 3.3M elements outside 1e-3: a sum of 16384 products of N(0, 1) near zero) and
amd/moe (12085 of 14.7M outside 1e-2 in bfloat16). So, as for KernelBench
(kopt.formats.kernelbench_workspace), the tolerance ``ref_kernel``'s own outputs meet twice over
on three draws of every benchmark there is taken, each output dtype's, and said; none up to 5e-2:
that dtype keeps the problem's, said too.

    python -m kopt.formats.gpumode_precision '{"folder": ..., "configs": [...], "seeds": [...], "device": "cuda"}'
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from kopt.formats import precision, set_tf32
from kopt.formats.gpumode import Problem

SEEDS = [16, 17, 18]  # as many draws as v0's gate makes


def checked(folder: Path, configs: list[dict], tols: dict) -> tuple[dict, str]:
    """``tols`` with each output dtype's widened where ``ref_kernel``'s own outputs do not meet it
    twice over at ``configs`` (on the GPU, in a child process); what to say of it."""
    device = precision.gpu_here()
    if device == "cpu":
        return (
            tols,
            "the benchmarks' sizes not checked against float64 (no GPU here: `kopt init` on the GPU's host does)",
        )
    args = {"folder": str(folder), "configs": configs, "seeds": SEEDS, "device": device}
    got = precision.in_child("kopt.formats.gpumode_precision", args)
    if got.get("worst") is None:
        return tols, f"the benchmarks' sizes not checked against float64 ({got['why']})"
    return widened(tols, got["worst"], f"{len(SEEDS)} draws of each benchmark, on the GPU")


def widened(tols: dict, worst: dict[str, float], where: str) -> tuple[dict, str]:
    """Each output dtype's tolerance (its own, else ``default``'s) where its ``worst`` gap is met
    twice over, else the least of precision.WIDER that is, at least as wide as its own."""
    out, said = dict(tols), []
    for dtype, gap in worst.items():
        own = tols.get(dtype, tols["default"])
        if precision.meets(gap, min(own["atol"], own["rtol"])):
            said.append(f"{dtype} within {gap:.3g} of float64 ({where})")
            continue
        least = max(own["atol"], own["rtol"])
        met = next((t for t in (least, *precision.WIDER) if t >= least and precision.meets(gap, t)), None)
        if met is None:
            said.append(f"{dtype} up to {gap:.3g} from float64 ({where}): no tolerance up to 5e-2 holds it, kept")
            continue
        out[dtype] = {"atol": met, "rtol": met}
        said.append(
            f"{dtype} atol = rtol = {met:g}, not {own['atol']:g}/{own['rtol']:g}: ref_kernel's own {dtype} outputs "
            f"are up to {gap:.3g} from float64 (|a - b| / (1 + |b|), {where})"
        )
    return out, "; ".join(said) or "no float outputs"


def worst_by_dtype(folder: str, configs: list[dict], seeds: list[int], device: str) -> dict[str, float]:
    """The worst gap of ``ref_kernel``'s outputs at their own dtype against its float64 run, per
    output dtype, over every config and seed (TF32 off, as the gate runs)."""
    set_tf32(False)
    problem, worst = Problem(Path(folder)), {}
    for cfg in configs:
        for seed in seeds:
            with torch.device(device):
                d = problem.setup(seed=seed, **cfg)
            own, exact = _outputs(problem, d, None), _outputs(problem, d, torch.float64)
            for name, a in own.items():
                if a.is_floating_point():
                    dtype = str(a.dtype).removeprefix("torch.")
                    worst[dtype] = max(worst.get(dtype, 0.0), precision.worst_gap([(a, exact[name])]))
            del own, exact
    return worst


def _outputs(problem: Problem, d: dict, dtype) -> dict[str, torch.Tensor]:
    """``ref_kernel``'s outputs on a copy of the draw's inputs, their floats cast to ``dtype``
    (None: their own)."""
    args = {}
    for k, v in d["inputs"].items():
        if isinstance(v, torch.Tensor):
            v = v.detach().to(dtype, copy=True) if dtype is not None and v.is_floating_point() else v.clone()
        args[k] = v
    ret = problem.reference(**args)
    items = list(ret) if isinstance(ret, (tuple, list)) else [ret] if isinstance(ret, torch.Tensor) else []
    names = d["outputs"]
    return dict(zip(names, items, strict=True)) if items else {n: args[n] for n in names}


if __name__ == "__main__":  # checked's child: the worst per dtype, as one JSON line
    try:
        print(json.dumps({"worst": worst_by_dtype(**json.loads(sys.argv[1])), "why": ""}))
    except Exception as e:  # noqa: BLE001 - the problem's own code at the benchmarks' sizes (float64 may not run)
        print(json.dumps({"worst": None, "why": f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"}))
