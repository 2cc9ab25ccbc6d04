"""Shared by the attacks: the honest softmax (tests/fixtures/bad_kernels/_honest.py) and a log the
test reads to prove the attack ran (KOPT_ATTACK_LOG, in a folder the sandbox lets kernels write)."""

import importlib.util
import os
import pathlib

_s = importlib.util.spec_from_file_location(
    "_honest", pathlib.Path(__file__).parents[1] / "bad_kernels" / "_honest.py"
)
_h = importlib.util.module_from_spec(_s)
_s.loader.exec_module(_h)
honest = _h.honest


def log(line: str) -> None:
    with open(os.environ["KOPT_ATTACK_LOG"], "a") as f:
        f.write(line + "\n")


def under_ncu() -> bool:
    """Whether Nsight Compute wraps this process: its injection library is named in the environment
    (what a kernel that has read kopt's code would look at first), or its libraries are loaded."""
    if os.environ.get("CUDA_INJECTION64_PATH"):
        return True
    try:
        with open("/proc/self/maps") as f:
            return any("nsight-compute" in ln or "Injection" in ln for ln in f)
    except OSError:
        return False


def share() -> float:
    """The share of each call's rows the attack moves (KOPT_ATTACK_SHARE, 0.1 by default)."""
    return float(os.environ.get("KOPT_ATTACK_SHARE", "0.1"))


def rows_moved(m: int) -> int:
    """Of ``m`` rows, the share moved: at least one, unless the share is 0."""
    return max(1, round(m * share())) if share() > 0 else 0
