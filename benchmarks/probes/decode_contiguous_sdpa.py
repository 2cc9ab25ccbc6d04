"""Decode attention against torch's best without paging (GPU only): scaled_dot_product_attention on a
KV cache that is already contiguous, (B, H_KV, ctx, D) as a static cache holds it, so no gather is
timed. Next to it, on the same data in the same process: the example's v2 on the paged cache and
ref.py's reference (the gather, then SDPA: the graph's torch eager baseline). Every call is timed by
kopt's one timed function (persisting L2 reset, L2 flushed, the spin kernel, CUDA events). Prints
per config the median of the calls in µs, GB/s of the compulsory bytes (ref.py's bytes_moved), and
v2's speedup over each; the outputs are compared first.

    python3 benchmarks/probes/decode_contiguous_sdpa.py [--calls 50]
"""

import argparse
import importlib.util
import statistics
import sys
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from kopt.measure.timing import Lab, event_time_us  # noqa: E402

WS = ROOT / "examples" / "decode_attention"


def load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def contiguous_cache(d: dict, ctx: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The sequences' keys and values gathered once, outside any timing: (B, H_KV, ctx, D)."""
    idx = d["block_table"].long()
    return tuple(c[idx].flatten(1, 2)[:, :ctx].transpose(1, 2).contiguous() for c in (d["k_cache"], d["v_cache"]))


def median_us(fn, lab: Lab, calls: int) -> float:
    for _ in range(5):  # warm-up: compiles, allocator
        fn()
    torch.cuda.synchronize()
    return statistics.median(event_time_us(fn, "cuda", caches=lab).us for _ in range(calls))


def one_config(ref, v2, cfg: dict, lab: Lab, calls: int) -> None:
    d = ref.setup(seed=1, **cfg)["inputs"]
    k, v = contiguous_cache(d, cfg["ctx"])
    q4, gqa = d["q"].unsqueeze(2), cfg["H"] != cfg["H_KV"]
    o = torch.empty_like(d["q"])
    impls = {
        "v2 on the paged cache": lambda: v2.run_kernel(**d, o=o),
        "torch SDPA, contiguous cache": lambda: torch.nn.functional.scaled_dot_product_attention(
            q4, k, v, enable_gqa=gqa
        ),
        "torch eager (ref.py: gather, then SDPA)": lambda: ref.reference(**d),
    }
    v2.run_kernel(**d, o=o)
    dense = impls["torch SDPA, contiguous cache"]().squeeze(2)
    err = (o.float() - dense.float()).abs().max().item()
    nbytes = ref.bytes_moved(**cfg)
    print(
        f"== {cfg['context']} B={cfg['B']} ctx={cfg['ctx']}: {nbytes / 1e9:.3f} GB; v2 against SDPA max |diff| {err:.2e}"
    )
    times = {name: median_us(fn, lab, calls) for name, fn in impls.items()}
    base = times["v2 on the paged cache"]
    for name, us in times.items():
        print(f"  {name:42s} {us:10.1f} us  {nbytes / us / 1e3:7.1f} GB/s  v2 {us / base:5.2f}x faster")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=50)
    args = ap.parse_args()
    torch.set_default_device("cuda")
    ref, v2 = load(WS / "ref.py", "ref"), load(WS / "kernels" / "v2.py", "v2")
    lab = Lab("cuda", flush_l2=True)
    print(torch.cuda.get_device_name(0), "torch", torch.__version__, f"{args.calls} calls per figure, medians")
    for cfg in yaml.safe_load((WS / "target.yaml").read_text())["configs"]:
        one_config(ref, v2, cfg, lab, args.calls)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
