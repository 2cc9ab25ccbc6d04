"""What a problem's own float outputs meet against their float64 run (trusted side: the user's own
reference code, never a kernel): the gap, whether a tolerance holds it twice over, the wider
tolerances tried, and the run at the GPU config's sizes in a child process of its own. KernelBench's
init (kopt.formats.kernelbench_workspace) and gpu-mode's (kopt.formats.gpumode_precision) use it,
so that a problem's own baseline never fails its own gate where float32 cannot meet the tolerance
against float64 at the sizes the GPU runs."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys

import torch

WIDER = (2e-4, 5e-4, 1e-3, 2e-3, 5e-3, 1e-2, 2e-2, 5e-2)  # the tolerances tried, atol = rtol, when the own fails
CHILD_TIMEOUT_S = 600  # the child running the draws on a GPU: past this, not checked


def meets(worst: float, t: float) -> bool:
    """Twice over: every output within atol = rtol = t / 2 of its float64 run (``worst``: ``worst_gap``)."""
    return worst <= t / 2


def worst_gap(floats: list[tuple[torch.Tensor, torch.Tensor]]) -> float:
    """The atol = rtol the outputs need against their float64 run: max |a - b| / (1 + |b|)."""
    return max((worst_ratio(a, e, 1.0, 1.0) for a, e in floats), default=0.0)


def worst_ratio(a: torch.Tensor, e: torch.Tensor, atol: float, rtol: float) -> float:
    """max |a - b| / (atol + rtol |b|) of ``a`` against its float64 run ``e``, by the gate's rules
    (torch.isclose with equal_nan: within (atol, rtol) exactly where this is at most 1): equal values
    are no gap (infinities and NaNs on both sides too), a NaN on one side an infinite one (Python's
    max would drop a NaN)."""
    a = a.double()
    same = (a == e) | (a.isnan() & e.isnan())
    ratio = torch.where(same, 0.0, (a - e).abs() / (atol + rtol * e.abs())).nan_to_num(nan=math.inf)
    return float(ratio.max()) if ratio.numel() else 0.0


def gpu_here() -> str:
    """Where init runs a problem at its GPU config's sizes: the GPU, where there is one."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def in_child(module: str, args: dict) -> dict:
    """``python -m <module> <args as JSON>``'s last line, a JSON object, so that init's process is
    left with no CUDA context and no cached memory: a process holding them makes the GPU
    availability gate wait (pytest's own, on an H200), and corpus runs sharing a GPU ran out of
    its memory (processes of 79-89 GiB). Not multiprocessing's spawn: it re-runs the caller's main
    script. Past CHILD_TIMEOUT_S, or failed: ``{"worst": None, "why": ...}``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}  # the caller's imports
    cmd = [sys.executable, "-m", module, json.dumps(args)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=CHILD_TIMEOUT_S, env=env)
    except subprocess.TimeoutExpired:
        return {"worst": None, "why": f"over {CHILD_TIMEOUT_S} s"}
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"worst": None, "why": f"its run failed ({' '.join(last.split())[:120]})"}
    return json.loads(lines[-1])  # the last line: the problem's code may print
