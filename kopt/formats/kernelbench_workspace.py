"""``kopt init DIR --kernelbench FILE``: a workspace from a KernelBench problem file.

It writes ``problem.py`` (the file, verbatim), a ``ref.py`` handing it to
kopt.formats.kernelbench, ``kernels/v0.py`` (torch eager, the version to beat) and
``target.yaml``: the file's own sizes as the GPU config; a CPU config made by halving the largest
size, one at a time, while the Model still runs on it (on the meta device), until the inputs and
weights hold at most CPU_BUDGET elements (CPU_LIMIT where the file fixes other sizes), then checked
by a real run on the CPU (a file without sizes, whose get_inputs fixes the shapes: one config, its
column ``inputs`` naming them, the same on the CPU within CPU_LIMIT); KernelBench's
tolerances. It says what it inferred. What it cannot map is one line naming the file, and
nothing is left behind.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import shutil
import sys
import time
from pathlib import Path

import torch
import yaml

from kopt.formats import host_available_bytes, precision, set_tf32, staged
from kopt.formats.kernelbench import FIXED, TOLERANCES, Problem, ProblemError, run_file, sizes_of
from kopt.formats.precision import WIDER
from kopt.formats.precision import meets as _meets
from kopt.formats.precision import worst_gap as _worst

EAGER_META = """parent: null
hypothesis: "Baseline: the problem's own Model in torch eager, as KernelBench times it."
rationale: "The version to beat: a ModelNew (kernels/v1.py) or a run_kernel of your own."
expected: "What PyTorch's kernels give at the file's sizes."
target_class: all
"""

CPU_BUDGET = 1 << 16  # elements of a CPU config's inputs and weights (the interpreter is slow) ...
CPU_LIMIT = 1 << 22  # ... or, where sizes the file fixes (224x224 images) keep it above, at most this
FLOOR = 8  # the least a size is halved to (one smaller to begin with is kept as it is)
# ... and where no size can be halved further, at most this (v0 is torch eager: MobileNetV1 and
# EfficientNetB0 at 224x224, 5-7M elements, which the floor keeps from degenerate 1-channel configs;
# VGG19's fixed layers hold 144M weights: 1.1 GB in float64, a forward of seconds on 2 cores)
STRUCTURE_LIMIT = 1 << 28

REF = '''"""KernelBench problem {name}, made into a kernel-opt reference by `kopt init --kernelbench`:
problem.py is {source}, verbatim; kopt.formats.kernelbench says how its sizes, inputs and weights
reach setup() and reference()."""

from pathlib import Path

from kopt.formats.kernelbench import Problem

_problem = Problem(Path(__file__).with_name("problem.py"))
setup, reference = _problem.setup, _problem.reference
'''

EAGER = '''"""v0: torch eager, the problem's own Model (the version to beat), made by `kopt init --kernelbench`.
It gets the inputs by name (forward's parameter names), the Model's weights (w_<name>), the sizes
(cfg_<name>) and the output buffers (out, or out0, out1, ...), and returns the outputs."""

from pathlib import Path

from kopt.formats.kernelbench import Problem

_problem = Problem(Path(__file__).resolve().parents[1] / "problem.py")


def run_kernel(**inputs):
    return _problem.reference(**inputs)
'''


SLOW_META_S = 1.0  # a forward on the meta device slower than this is not run again while sizing


def _probe(problem: Problem, sizes: dict) -> dict:
    """``problem.setup`` at ``sizes`` on the meta device (no memory, the forward checked there), or
    where its Model cannot be built there (an ``__init__`` that reads a value: SwinMLP's ``.item()``)
    its inputs and weights built on the CPU, no forward. Where the first forward on meta took over
    SLOW_META_S (the LSTM's, 8-19 s at the file's sizes: its steps one by one), later probes build
    the inputs and weights on meta without it; ``cpu_sizes`` runs the sizes it settles on."""
    if getattr(problem, "slow_meta", False):
        with torch.device("meta"):
            return {"inputs": problem.inputs(0, **sizes)}
    try:
        t0 = time.perf_counter()
        with torch.device("meta"):
            got = problem.setup(0, **sizes)
        problem.slow_meta = time.perf_counter() - t0 > SLOW_META_S
        return got
    except ProblemError:
        raise
    except Exception:  # noqa: BLE001 - tried again for real, where a failure is the Model's own
        with torch.device("cpu"):
            return {"inputs": problem.inputs(0, **sizes)}


def _elements(problem: Problem, sizes: dict) -> int:
    """Elements of the inputs and the Model's weights at ``sizes``."""
    return _count(_probe(problem, sizes)["inputs"])


def _count(inputs: dict) -> int:
    return sum(t.numel() for t in inputs.values() if isinstance(t, torch.Tensor))


def _runs(problem: Problem, sizes: dict) -> bool:
    try:
        _elements(problem, sizes)
        return True
    except Exception:  # noqa: BLE001 - a size the Model does not take
        return False


def cpu_sizes(problem: Problem, sizes: dict) -> dict:
    """``sizes`` with the largest integer size halved, one at a time, while the Model runs on them,
    until the inputs and weights hold at most CPU_BUDGET elements (STRUCTURE_LIMIT where no size
    can be halved further; CPU_LIMIT for a file without sizes); then run for real on the CPU. No size goes under FLOOR, nor under its own value
    where that is smaller: a structural size (a head count, an expand ratio, a sequence length) cut
    to 1 takes another branch than the GPU config's (MinGPT's seq_len 512 -> 1 never exercised its
    causal mask, EfficientNet's expand_ratio 6 -> 1 skipped its expand layer). Where that real run
    fails (a forward meta cannot check, whose sizes are tied: level 2's LayerNorm over the last
    dimension sized by out_channels, equal to the transposed convolution's output width), every
    size is halved together instead, which keeps such ties; and where that fails too (a pooling
    whose fixed window outgrew the halved image: MobileNetV1's AvgPool2d(7), DenseNet's), the last
    halvings are undone, one at a time, until the Model runs."""
    cur, steps = _halved_one_at_a_time(problem, sizes)
    failed = _fails_for_real(problem, cur)
    if failed is None:
        return cur
    together = _halved_together(problem, sizes)
    small = together != cur and _elements(problem, together) <= STRUCTURE_LIMIT
    if small and _fails_for_real(problem, together) is None:
        return together
    backed = _backed_off(problem, cur, steps)
    if backed is not None:
        return backed
    raise ProblemError(f"{problem.path}: its Model fails on the CPU sizes {cur} ({failed})")


def _backed_off(problem: Problem, cur: dict, steps: list[str]) -> dict | None:
    """``cur`` with its last halvings (``steps``, in order) undone one at a time until the Model
    runs for real, while its inputs and weights stay under STRUCTURE_LIMIT; None where none does."""
    cur = dict(cur)
    for k in reversed(steps):
        cur[k] *= 2
        if _elements(problem, cur) > STRUCTURE_LIMIT:
            return None
        if _fails_for_real(problem, cur) is None:
            return cur
    return None


def _halved_one_at_a_time(problem: Problem, sizes: dict) -> tuple[dict, list[str]]:
    """The sizes, and the keys halved in order."""
    cur, frozen, steps = dict(sizes), set(), []
    while _elements(problem, cur) > CPU_BUDGET:
        free = [k for k in _halvable(sizes, cur) if k not in frozen]
        if not free:
            if _elements(problem, cur) <= (STRUCTURE_LIMIT if sizes else CPU_LIMIT):
                break
            if not sizes:
                raise ProblemError(
                    f"{problem.path}: get_inputs fixes its shapes (no module-level sizes), and its inputs and "
                    f"weights hold {_elements(problem, cur)} elements, over the CPU's {CPU_LIMIT}"
                )
            raise ProblemError(
                f"{problem.path}: halving its sizes gives no config under {STRUCTURE_LIMIT} elements that its Model "
                f"runs on and that keeps every size at least {FLOOR} (or its own)"
            )
        k = max(free, key=lambda x: cur[x])
        trial = {**cur, k: cur[k] // 2}
        if _runs(problem, trial):
            cur = trial
            steps.append(k)
        else:
            frozen.add(k)
    return cur, steps


def _halved_together(problem: Problem, sizes: dict) -> dict:
    """Every integer size halved at once, step by step, to CPU_BUDGET (or until none can be)."""
    cur = dict(sizes)
    while _elements(problem, cur) > CPU_BUDGET and _halvable(sizes, cur):
        cur = {**cur, **{k: cur[k] // 2 for k in _halvable(sizes, cur)}}
    return cur


def _halvable(sizes: dict, cur: dict) -> list[str]:
    return [
        k
        for k, v in cur.items()
        if isinstance(v, int) and not isinstance(v, bool) and v > 0 and v // 2 >= min(sizes[k], FLOOR)
    ]


def _fails_for_real(problem: Problem, cur: dict) -> str | None:
    """The Model's error on the CPU at ``cur``, run for real; None where it runs."""
    with torch.device("cpu"):
        try:
            problem.reference(**problem.setup(0, **cur)["inputs"])
        except Exception as e:  # noqa: BLE001 - the user's Model on its CPU sizes
            return f"{type(e).__name__}: {e}"
    return None


CHECK_DRAWS = 3  # as many as v0's gate draws (target_doc's seeds): one draw's margin is no other's
# where those miss KernelBench's tolerance, the draws a wider one is chosen on: a Model whose float32
# is far from float64 on some draws is so on few (Mamba2ReturnFinalState at its CPU sizes, 300 draws:
# half within 1.4e-4, 5.7% over 1e-3, 1.3% over 2e-3, the worst 1.04e-2)
MORE_DRAWS = 16
# the draws at the file's own sizes (not draw 0: randomness was checked): on a GPU as many as v0's gate
# draws (level 2's Gemm_Divide_Sum_Scaling: on an H200 init's one draw met 1e-4 twice over, while its
# gate's three missed it on 1-21 of 1024 elements in every run; on the CPU its draws range from 3.0e-5
# to 4.6e-4, init and the gate agreeing seed by seed), one on the CPU (seconds each)
OWN_SIZE_DRAWS = {"cuda": list(range(MORE_DRAWS, MORE_DRAWS + CHECK_DRAWS)), "cpu": [MORE_DRAWS]}
# on a GPU, where those three miss the tolerance chosen so far, MORE_DRAWS in all before a wider one is
# taken (Gemm_Divide_Sum_Scaling on an H200: init's three up to 2.59e-3, so 1e-2; the gate's three seeds
# up to 7.58e-3 on the same figure, a margin of 1.3x, not two)
OWN_SIZE_MORE = list(range(MORE_DRAWS + CHECK_DRAWS, 2 * MORE_DRAWS))
KB_SAID = "KernelBench's (fp32 1e-4, fp16/bf16 1e-2)"


def checkable(problem: Problem, small: dict, source: Path, sizes: dict | None, n: int) -> tuple[dict, str]:
    """Whether v0's gate can pass: the Model run twice on the same CPU inputs must agree (else one
    line: randomness in forward), and its float32 outputs must meet the tolerance twice over
    against its float64 run, on CHECK_DRAWS draws (level 3's Mamba2ReturnFinalState met
    KernelBench's 1e-4 on its first draw and missed it 4.9-fold on its third); where KernelBench's
    does not, the least of WIDER it meets so on MORE_DRAWS draws. Then the draws at the file's own
    ``sizes`` (``_at_own_sizes``: on a GPU where there is one, for every problem; else on the CPU
    where a wider tolerance was chosen) must meet it twice over too, else the least of WIDER that
    they do is taken (none: one line). ``n``: the elements of inputs and weights at ``sizes``.
    (tolerances, what to say of them)."""
    floats = [pair for seed in range(CHECK_DRAWS) for pair in _against_float64(problem, small, seed, source)]
    if not floats:
        return TOLERANCES, KB_SAID
    dtype = str(floats[0][0].dtype).removeprefix("torch.")
    own = TOLERANCES.get(dtype, TOLERANCES["default"])["atol"]
    worst = _worst(floats)  # the atol = rtol they need
    if not _meets(worst, own) and _meets(worst, WIDER[-1]):  # else more draws can only miss further
        more = [
            pair for seed in range(CHECK_DRAWS, MORE_DRAWS) for pair in _against_float64(problem, small, seed, source)
        ]
        worst = max(worst, _worst(more))
    met = next((t for t in (own, *WIDER) if _meets(worst, t)), None)
    if met is None:
        raise ProblemError(
            f"{source}: its own float32 forward is up to {worst:.3g} from its float64 run (|a - b| / (1 + |b|)) on "
            f"the CPU sizes {small}: over 5% apart, nothing checks it"
        )
    on_cpu_sizes = f"up to {worst:.3g} from its float64 run (|a - b| / (1 + |b|)) on the CPU sizes"
    if met != own:
        on_cpu_sizes += f" (it meets {met:g} twice over on {MORE_DRAWS} draws)"
    full_worst, where, unchecked = _at_own_sizes(problem, small, sizes, source, n, met, widened=met != own)
    if full_worst is not None:
        met = next((t for t in (own, *WIDER) if t >= met and _meets(full_worst, t)), None)
        if met is None:
            raise ProblemError(
                f"{source}: its own float32 forward is up to {full_worst:.3g} from its float64 run "
                f"(|a - b| / (1 + |b|)) at the file's own sizes {sizes} ({where}), though {on_cpu_sizes} {small}: "
                f"no tolerance up to {WIDER[-1]:g} holds it twice over at the sizes its GPU config runs, nothing "
                "checks it element by element; draw its inputs in float64 (get_inputs) to check it at all, or make "
                "its forward stable in float32"
            )
    at_own = f"up to {full_worst:.3g} at the file's own sizes ({where})" if full_worst is not None else ""
    skipped = f"not checked at the file's own sizes ({unchecked})" if unchecked else ""
    if met == own:
        said = [KB_SAID, at_own and f"its own {dtype} forward {at_own}", skipped]
        return TOLERANCES, "; ".join(x for x in said if x)
    widened = {dtype: {"atol": met, "rtol": met}}
    if dtype == "float32":  # "default" is KernelBench's fp32 too: the label a config without a dtype column records
        widened["default"] = widened[dtype]
    return {**TOLERANCES, **widened}, (
        f"{dtype} atol = rtol = {met:g}, not KernelBench's {own:g}: the Model's own {dtype} forward is {on_cpu_sizes}"
        + (f", {at_own}" if at_own else "")
        + (f"; {skipped}: v0 may miss it there" if skipped else "")
    )


FULL_BYTES_PER_ELEMENT = 64  # memory a float32 and a float64 run take per element of the inputs and
# weights, with room: level 3's Mamba2 problems peaked at 36-42 (8.6 GB for 203M elements)


own_sizes_device = precision.gpu_here


def _at_own_sizes(
    problem: Problem, small: dict, sizes: dict | None, source: Path, n: int, met: float, widened: bool
) -> tuple[float | None, str, str]:
    """The worst |a - b| / (1 + |b|) of OWN_SIZE_DRAWS at the file's own sizes, where they are not
    the CPU's: on a GPU where there is one (TF32 off, as v0's gate runs: level 2's
    Gemm_Divide_Sum_Scaling met 1e-4 on its CPU sizes and missed it on 21 of 1024 elements on an
    H200 at its own, level 3's UNetSoftmax on 477 of 1M), within FULL_BYTES_PER_ELEMENT of its free
    memory; else on the CPU, only where a wider tolerance was chosen there (level 3's Mamba2
    problems: 2e-3 on 16 CPU-size draws, their v0 450 of 16.8M elements outside it on an H200 at
    their own sizes; one CPU draw 0.40 off), within STRUCTURE_LIMIT elements and
    FULL_BYTES_PER_ELEMENT of the host's available memory. The CPU's float32 is no guide to the
    GPU's elsewhere (UNetSoftmax: 1.5e-2 on this CPU, 3.1e-2 on an H200).
    On a GPU they run in a child process (``_in_child``), and where they do not meet ``met`` (the
    tolerance chosen so far) twice over, OWN_SIZE_MORE draws more. (the worst, where it ran, why not: None
    where the sizes are the CPU's). A Model that fails there (its working memory beyond the
    device's) is not refused for it: the GPU may run it."""
    if not sizes or sizes == small:
        return None, "", ""
    device = own_sizes_device()
    if device == "cpu" and not widened:
        return None, "", "no GPU here: `kopt init` on the GPU's host checks them there"
    if device == "cpu" and (n > STRUCTURE_LIMIT or n * FULL_BYTES_PER_ELEMENT > host_available_bytes()):
        return None, "", f"{n} elements of inputs and weights, too many for this host"
    draws = OWN_SIZE_DRAWS[device]
    args = {"path": str(problem.path), "sizes": sizes, "draws": draws, "source": str(source), "device": device, "n": n}
    try:
        worst, why = _worst_at(**args) if device == "cpu" else _in_child(args)
    except Exception as e:  # noqa: BLE001 - the device's limits, not the Model's fault
        worst, why = None, f"{type(e).__name__}: {' '.join(str(e).split())[:120]}"
    if device == "cuda" and worst is not None and not _meets(worst, met):
        more, _ = _in_child({**args, "draws": OWN_SIZE_MORE})  # failed: the three stand
        if more is not None:
            worst, draws = max(worst, more), draws + OWN_SIZE_MORE
    where = f"{len(draws)} draw{'s' * (len(draws) > 1)}, on the {device.replace('cuda', 'GPU').upper()}"
    return worst, "" if worst is None else where, why


def _in_child(args: dict) -> tuple[float | None, str]:
    """``_worst_at(**args)`` in a child process of its own (``precision.in_child``)."""
    got = precision.in_child("kopt.formats.kernelbench_workspace", args)
    return got["worst"], got["why"]


def _worst_at(path: str, sizes: dict, draws: list, source: str, device: str, n: int) -> tuple[float | None, str]:
    """The worst float32 output against its float64 run over ``draws`` at ``sizes`` on ``device``, or
    why not (the GPU's free memory read in the child, which holds the GPU)."""
    if device == "cuda" and n * FULL_BYTES_PER_ELEMENT > torch.cuda.mem_get_info()[0]:
        return None, f"{n} elements of inputs and weights, too many for this GPU's free memory"
    problem = Problem(Path(path))
    return max(_worst(_float32_and_64(problem, sizes, seed, Path(source), device)) for seed in draws), ""


def _against_float64(problem: Problem, small: dict, seed: int, source: Path) -> list[tuple]:
    """Draw ``seed``'s floating outputs and their float64 run, on the CPU; on the first draw the
    Model is run twice, and outputs that differ are one line (randomness in forward)."""
    try:
        return _float32_and_64(problem, small, seed, source)
    except ProblemError:
        raise
    except Exception as e:  # noqa: BLE001 - the user's Model on a draw of its CPU sizes: one line
        raise ProblemError(
            f"{source}: its Model fails on draw {seed} of the CPU sizes {small} ({type(e).__name__}: {e})"
        ) from None


def _float32_and_64(problem: Problem, small: dict, seed: int, source: Path, device: str = "cpu") -> list[tuple]:
    if device == "cuda":
        set_tf32(False)
    with torch.device(device):
        inputs = problem.setup(seed, **small)["inputs"]
        first = _outputs(problem, inputs)
        again = [_outputs(problem, inputs), _outputs_elsewhere(problem, inputs)] if seed == 0 else []
        if any(not torch.equal(a, b) for other in again for a, b in zip(first, other, strict=True)):
            raise ProblemError(
                f"{source}: its Model gives other outputs for the same inputs and weights (randomness in forward: a "
                "Dropout in training mode, a torch.randn there; or a tensor drawn without a seed in __init__ that is "
                "no weight), so no reference can check it as written: make forward deterministic (dropout p=0 or "
                "the Model in eval mode; random tensors drawn in get_inputs and passed in; what __init__ draws "
                "seeded), then init again"
            )
        wide = {
            k: v.double() if isinstance(v, torch.Tensor) and v.is_floating_point() else v for k, v in inputs.items()
        }
        # its own Model: a float64 run leaves float64 state in a Model that keeps some (VanillaRNN's
        # self.hidden), and the next draw's float32 run would mix the two
        exact = _outputs(Problem(problem.path), wide)
    return [(a, e) for a, e in zip(first, exact, strict=True) if a.is_floating_point()]


def _outputs_elsewhere(problem: Problem, inputs: dict) -> list[torch.Tensor]:
    """The outputs of a Model of its own, built from another random state, as v0's process and the
    reference's each build theirs: a tensor its __init__ draws without a seed differs."""
    torch.manual_seed(secrets.randbits(63))
    return _outputs(Problem(problem.path), inputs)


def _outputs(problem: Problem, inputs: dict) -> list[torch.Tensor]:
    got = problem.reference(**inputs)
    return list(got) if isinstance(got, (tuple, list)) else [got]


def _shapes(inputs: dict) -> str:
    """The shapes of a fixed-size problem's inputs (not its weights): ``1x128,1x128``."""
    shapes = ["x".join(map(str, t.shape)) for k, t in inputs.items() if isinstance(t, torch.Tensor) and k[:2] != "w_"]
    return ",".join(shapes)


def target_doc(name: str, source: Path, sizes: dict, small: dict, tolerances: dict = TOLERANCES) -> str:
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    halved = ", ".join(f"{k} {sizes[k]} -> {small[k]}" for k in sizes if small[k] != sizes[k]) or "none"
    head = (
        f"# Made by `kopt init --kernelbench` from {source} (sha256 {digest}...).\n"
        "# configs: the file's own sizes. cpu_configs: the largest size halved, one at a time, while the\n"
        f"# Model runs, until inputs and weights hold at most {CPU_BUDGET} elements ({halved}).\n"
        "# tolerances: KernelBench's (src/kernelbench/eval.py: atol = rtol = 1e-4 in fp32, 1e-2 in fp16/bf16),\n"
        "# or, where the Model's own float32 forward does not meet them against float64, what it meets.\n"
    )
    doc = {
        "name": name,
        "class_by": [next(iter(sizes))] if sizes else [],
        "configs": [sizes],
        "cpu_configs": [small],
        "tolerances": tolerances,
        "seeds": CHECK_DRAWS,
    }
    return head + yaml.safe_dump(doc, sort_keys=False)


def init(dest: Path, source: Path, check=None) -> list[str]:
    """The workspace at ``dest`` (which must not exist, or be empty); what it inferred, as lines."""
    if dest.exists() and any(dest.iterdir()):  # before the problem file runs
        raise ProblemError(f"{dest}: exists and is not empty; kopt init writes a new workspace")
    sizes = sizes_of(run_file(source))
    with staged(dest, check) as staging:
        shutil.copyfile(source, staging / "problem.py")
        problem = Problem(staging / "problem.py")
        try:
            small = cpu_sizes(problem, sizes)
        except ProblemError as e:  # said of the user's file, not of the copy being written
            raise ProblemError(str(e).replace(str(problem.path), str(source))) from None
        got = _probe(problem, sizes)
        if "outputs" not in got:  # built on the CPU (no forward there): named at the CPU sizes
            with torch.device("cpu"):
                got["outputs"] = problem.setup(0, **small)["outputs"]
        tolerances, said = checkable(problem, small, source, sizes, _count(got["inputs"]))  # probed once
        if not sizes:  # shapes fixed in get_inputs: one config, named by them
            sizes = small = {FIXED: _shapes(got["inputs"])}
        name = source.stem
        (staging / "ref.py").write_text(REF.format(name=name, source=source.name))
        (staging / "kernels" / "v0.py").write_text(EAGER)
        (staging / "kernels" / "v0.yaml").write_text(EAGER_META)
        (staging / "target.yaml").write_text(target_doc(name, source, sizes, small, tolerances))
    args = [k for k in got["inputs"] if not k.startswith(("w_", "cfg_"))]
    weights = [k for k in got["inputs"] if k.startswith("w_")]
    return [
        f"{dest}: KernelBench problem {source.name}",
        f"  GPU config (the file's sizes): {sizes}",
        f"  CPU config: {small}",
        f"  inputs {args}, weights {len(weights)} ({', '.join(weights[:4])}{', ...' if len(weights) > 4 else ''}), "
        f"outputs {got['outputs']}",
        f"  tolerances: {said}; v0: torch eager",
    ]


if __name__ == "__main__":  # _in_child's entry: the worst at the file's own sizes, as one JSON line
    worst, why = _worst_at(**json.loads(sys.argv[1]))
    print(json.dumps({"worst": worst, "why": why}))
