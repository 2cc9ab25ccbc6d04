"""What writing a call's inputs just before it does to the kernel's own time (GPU only).

    python benchmarks/prepare_cost.py --version v0 --config M=32768,N=2048 [--rounds 5 --calls 200]

Times one version on one config of the example with the harness's bracket (kopt.measure.timing.Lab:
persisting-L2 reset, 256 MB L2 flush, spin, CUDA events), the outputs poisoned before every call,
and the inputs prepared four ways, interleaved round by round:

* ``fixed``: one set of inputs for every call (the harness before fresh inputs);
* ``rewrite``: the same values copied back into the same buffers before every call;
* ``fresh``: new random values written into the same buffers before every call;
* ``rotate``: the harness's own pool (kopt.measure.trial.Trial: fresh values, sets in turn);
* ``buffersK`` (with ``--placements``): ``fixed`` in other buffers (same values, other addresses).

Prints the median per mode and round, and each mode's change against ``fixed``.
"""

import argparse
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from kopt.measure import (
    timing,
    variants,  # noqa: E402
)
from kopt.measure.device import Guard, poison  # noqa: E402
from kopt.measure.trial import Trial  # noqa: E402


def _time(lab: timing.Lab, prepare, call) -> float:
    prepare()
    lab.clear_caches()
    torch.cuda._sleep(timing.SPIN_CYCLES)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    call()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--workspace", default="examples/softmax")
    ap.add_argument("--version", default="v0")
    ap.add_argument("--config", default="M=32768,N=2048", help="k=v pairs of the config")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--placements", type=int, default=0, help="also time 'fixed' in this many other buffers each")
    a = ap.parse_args()
    torch.set_default_device("cuda")
    ws = Path(a.workspace)
    cfg = {k: int(v) if v.isdigit() else v for k, v in (kv.split("=") for kv in a.config.split(","))}
    ref = variants.load_reference(str(ws / "ref.py"))
    kernel = variants.load_variant(str(ws / "kernels" / f"{a.version}.py"))
    x = ref.setup(seed=1, **cfg)["inputs"]
    y = {"y": torch.empty_like(ref.reference(**x))}
    saved = {n: t.clone() for n, t in x.items()}
    gen = torch.Generator(device="cuda")
    lab = timing.Lab("cuda", True)

    def poisoned(extra=None):
        def prep():
            if extra:
                extra()
            poison(y["y"])

        return prep

    def rewrite():
        for n, t in x.items():
            t.copy_(saved[n])

    def fresh():
        for t in x.values():
            t.normal_(0.0, 3.0, generator=gen)

    item = {"key": a.config, "config": cfg, "class": "probe", "tol": {"atol": 1e-5, "rtol": 1e-5}}
    trial = Trial(ref, kernel, item, device="cuda", guard=Guard(), opts={}, phase="bench", max_sets=8)
    modes = {
        "fixed": (poisoned(), lambda: kernel(**x, **y)),
        "rewrite": (poisoned(rewrite), lambda: kernel(**x, **y)),
        "fresh": (poisoned(fresh), lambda: kernel(**x, **y)),
    }
    for p in range(a.placements):  # the same values in other buffers, all kept alive: other addresses
        xp = {n: t.clone() for n, t in saved.items()}
        yp = torch.empty_like(y["y"])
        modes[f"buffers{p + 1}"] = (lambda yp=yp: poison(yp), lambda xp=xp, yp=yp: kernel(**xp, y=yp))
    state = {}
    modes["rotate"] = (lambda: state.update(s=trial.prepare()), lambda: trial.call(state["s"]))
    for prep, call in modes.values():  # compile and warm up
        for _ in range(5):
            _time(lab, prep, call)
    med = {m: [] for m in modes}
    for r in range(a.rounds):
        for m, (prep, call) in modes.items():
            med[m].append(statistics.median(_time(lab, prep, call) for _ in range(a.calls)))
        print(f"round {r}: " + "  ".join(f"{m} {med[m][-1]:.2f} us" for m in modes), flush=True)
    base = statistics.median(med["fixed"])
    for m in modes:
        v = statistics.median(med[m])
        print(
            f"{a.version} {a.config} {m:8s} median of round medians {v:9.2f} us  vs fixed {100 * (v / base - 1):+.2f}%"
        )


if __name__ == "__main__":
    main()
