"""A gpu-mode problem's own float outputs against their float64 run at the benchmarks' sizes, on
the GPU at init (trusted side: the problem's own ``ref_kernel``, never a kernel). gpu-mode's eval
compares a submission with ``ref_kernel`` run on the same GPU at the data's own dtypes; kernel-opt
compares with a float64 run. On an H200 the problems' own submissions then failed their gate where
float32 or bfloat16 cannot meet the problem's tolerance against float64 at those sizes: pmpp's
conv2d (1 of 3.3M elements outside 1e-3: a sum of 16384 products of N(0, 1) near zero) and
amd/moe (12085 of 14.7M outside 1e-2 in bfloat16). So, as for KernelBench
(kopt.formats.kernelbench_workspace), where ``ref_kernel``'s own outputs do not meet an output
dtype's tolerance twice over on three draws of every benchmark, its atol and rtol are scaled
together by the least factor of FACTORS that they meet so (the problem's ratio of the two kept),
and said; none up to 5e-2: the problem's stands, said too.

    python -m kopt.formats.gpumode_precision '{"folder": ..., "configs": [...], "seeds": [...], "device": "cuda", "tols": {...}}'
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from kopt.formats import precision, set_tf32
from kopt.formats.gpumode import Problem

SEEDS = [16, 17, 18]  # as many draws as v0's gate makes
FACTORS = (2, 5, 10, 20, 50, 100, 200, 500, 1000)  # the problem's tolerance scaled by each in turn
MOST = precision.WIDER[-1]  # no atol or rtol beyond this


def checked(folder: Path, configs: list[dict], tols: dict) -> tuple[dict, str]:
    """``tols`` with each output dtype's widened where ``ref_kernel``'s own outputs do not meet it
    twice over at ``configs`` (on the GPU, in a child process); what to say of it."""
    device = precision.gpu_here()
    if device == "cpu":
        return (
            tols,
            "the benchmarks' sizes not checked against float64 (no GPU here: `kopt init` on the GPU's host does)",
        )
    args = {"folder": str(folder), "configs": configs, "seeds": SEEDS, "device": device, "tols": tols}
    got = precision.in_child("kopt.formats.gpumode_precision", args)
    if got.get("worst") is None:
        return tols, f"the benchmarks' sizes not checked against float64 ({got['why']})"
    where = f"{len(SEEDS)} draws of each benchmark, on the GPU" + (f"; not checked: {got['why']}" if got["why"] else "")
    return widened(tols, got["worst"], where)


def own_tolerance(tols: dict, dtype: str) -> dict:
    return tols.get(dtype, tols["default"])


def widened(tols: dict, worst: dict[str, dict], where: str) -> tuple[dict, str]:
    """Each output dtype's tolerance where ``worst[dtype]["over"]`` (its worst |a - b| over atol +
    rtol |b|, the problem's own) is at most 1/2, else scaled by the least of FACTORS after which it
    is, its atol and rtol at most MOST (an exact one: the least of precision.WIDER its ``gap`` meets
    twice over, as KernelBench's). float32's widens ``default`` too: a config has no dtype column,
    and the gate records ``default`` as the config's tolerance (integer outputs stay exact)."""
    out, said = dict(tols), []
    for dtype, w in worst.items():
        own = own_tolerance(tols, dtype)
        if w["over"] <= 0.5:
            said.append(f"{dtype} within half its tolerance of float64 ({where})")
            continue
        if own["atol"] == own["rtol"] == 0:
            met = next((t for t in precision.WIDER if precision.meets(w["gap"], t)), None)
            new = None if met is None else {"atol": met, "rtol": met}
        else:
            f = next((f for f in FACTORS if w["over"] / f <= 0.5 and max(own.values()) * f <= MOST), None)
            new = None if f is None else {k: own[k] * f for k in ("atol", "rtol")}
        if new is None:
            said.append(f"{dtype} up to {w['over']:.3g} times its tolerance from float64 ({where}): none up to "
                        f"{MOST:g} holds it twice over, kept")  # fmt: skip
            continue
        out[dtype] = new
        if dtype == "float32":
            out["default"] = new
        said.append(
            f"{dtype} atol {new['atol']:.3g}, rtol {new['rtol']:.3g}, not {own['atol']:g}, {own['rtol']:g}: "
            f"ref_kernel's own {dtype} outputs are up to {w['over']:.3g} times that from float64 ({where})"
        )
    return out, "; ".join(said) or "no float outputs"


def worst_by_dtype(folder: str, configs: list[dict], seeds: list[int], device: str, tols: dict) -> tuple[dict, str]:
    """Per output dtype, over every config and seed, ``ref_kernel``'s outputs at their own dtype
    against its float64 run (TF32 off, as the gate runs): ``gap``, the worst |a - b| / (1 + |b|),
    and ``over``, the worst |a - b| / (atol + rtol |b|) of the dtype's tolerance; and the configs
    that could not be run so (a float64 run beyond the GPU's memory), named."""
    set_tf32(False)
    problem, worst, skipped = Problem(Path(folder)), {}, []
    for cfg in configs:
        try:
            for seed in seeds:
                _add(worst, _pairs(problem, cfg, seed, device), tols)
        except Exception as e:  # noqa: BLE001 - the problem's own code at this size: the others still count
            skipped.append(f"{cfg} ({type(e).__name__}: {' '.join(str(e).split())[:100]})")
            if device == "cuda":
                torch.cuda.empty_cache()
    if not worst and skipped:
        raise RuntimeError("; ".join(skipped))
    return worst, "; ".join(skipped)


def _add(worst: dict, pairs: list[tuple[torch.Tensor, torch.Tensor]], tols: dict) -> None:
    for a, e in pairs:
        dtype = str(a.dtype).removeprefix("torch.")
        own = own_tolerance(tols, dtype)
        w = worst.setdefault(dtype, {"gap": 0.0, "over": 0.0})
        w["gap"] = max(w["gap"], precision.worst_ratio(a, e, 1.0, 1.0))
        w["over"] = max(w["over"], precision.worst_ratio(a, e, own["atol"], own["rtol"]))


def _pairs(problem: Problem, cfg: dict, seed: int, device: str) -> list[tuple[torch.Tensor, torch.Tensor]]:
    with torch.device(device):
        d = problem.setup(seed=seed, **cfg)
    own, exact = _outputs(problem, d, None), _outputs(problem, d, torch.float64)
    return [(a, exact[n]) for n, a in own.items() if a.is_floating_point()]


def _outputs(problem: Problem, d: dict, dtype) -> dict[str, torch.Tensor]:
    """``ref_kernel``'s outputs (setup() named them, in its return order) on a copy of the draw's
    inputs, their floats cast to ``dtype`` (None: their own), without autograd, as the judge runs it."""
    args = {}
    for k, v in d["inputs"].items():
        if isinstance(v, torch.Tensor):
            v = v.detach().to(dtype, copy=True) if dtype is not None and v.is_floating_point() else v.detach().clone()
        args[k] = v
    with torch.no_grad():
        ret = problem.reference(**args)
    items = list(ret) if isinstance(ret, (tuple, list)) else [ret]
    return {n: t.detach() for n, t in zip(d["outputs"], items, strict=True)}


if __name__ == "__main__":  # checked's child: the worst per dtype, as one JSON line
    try:
        worst, why = worst_by_dtype(**json.loads(sys.argv[1]))
        print(json.dumps({"worst": worst, "why": why}))
    except Exception as e:  # noqa: BLE001 - the problem's own code at the benchmarks' sizes (float64 may not run)
        print(json.dumps({"worst": None, "why": f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"}))
