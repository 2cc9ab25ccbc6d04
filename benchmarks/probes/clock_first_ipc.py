"""Probe (issue 44): where a clock process's first order of a config goes.

In rule `measure`'s clock each config's process answers its `config` order (the arena's CUDA IPC
handle opened, its views made) in 120-140 ms, where a later config's order in the timing process
takes under 40 ms (`docs/runs/h200-bound-host-work/bench_phases_trace.txt`): five of those are
0.6 s of the clock, one after another. Is it the process's first CUDA IPC open (a fixed cost, which
could be paid beside the in-process timing), or the size mapped?

A process, plain and then under the deciding clock's ncu command (kopt.profilers.ncu.clock_command),
makes its CUDA context (no launch, as kopt.inside.serve._clock_context), then opens tensors of
this process's by CUDA IPC as the arena is opened (1 MiB, 1 GiB, another 1 MiB, no launch), each
step timed (synchronized). Two rounds.

(Not asked here: whether every clock process could make its warm-up launch at once. It cannot:
Nsight Compute shuts a process down when its launch is refused while another holds the profiler,
`docs/runs/h100-clock/3-h200-concurrent/ncu_clock.M_64_N_64_dtype_float32.csv`.)

    source benchmarks/gpu_env.sh; timeout -s INT -k 10 120 python3 benchmarks/probes/clock_first_ipc.py
"""

import json
import pickle
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def child() -> None:
    """Steps from stdin ('context', 'ipc <hex>', 'leave'), one JSON line each on stdout."""
    import torch
    import torch.multiprocessing.reductions as red

    for line in sys.stdin:
        step, t0, error = line.strip(), time.perf_counter(), None
        try:
            if step == "context":
                torch.empty(1, device="cuda")
            elif step.startswith("ipc "):
                fn, args = pickle.loads(bytes.fromhex(step.split()[1]))
                getattr(red, fn)(*args)  # opened, no launch (one under ncu would pay its set-up here)
                step = f"ipc {tuple(args[1])}"
            elif step == "leave":
                return
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - the failure is what the probe reads
            error = f"{type(e).__name__}: {str(e)[:160]}"
        ms = round((time.perf_counter() - t0) * 1e3, 1)
        print(json.dumps({"step": step, "ms": ms, "error": error}), flush=True)


def one_process(name: str, csv: Path | None, handles: list[str]) -> None:
    from kopt.profilers import ncu

    wrap = ncu.clock_command("ncu", str(csv)) if csv else []
    p = subprocess.Popen([*wrap, sys.executable, __file__, "child"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)  # fmt: skip
    for step in ["context", *(f"ipc {h}" for h in handles)]:
        p.stdin.write(step + "\n")
        p.stdin.flush()
        d = json.loads(next(ln for ln in p.stdout if ln.startswith("{")))
        print(f"  {name:5s} {d['step']:28s} {d['ms']:>8} ms  {d['error'] or ''}", flush=True)
    p.stdin.write("leave\n")
    p.stdin.close()
    p.wait()


def main() -> None:
    import torch
    import torch.multiprocessing.reductions as red

    shared = [torch.ones(n, device="cuda") for n in (1 << 18, 1 << 28, 1 << 18)]  # 1 MiB, 1 GiB, 1 MiB
    handles = []
    for t in shared:
        fn, args = red.reduce_tensor(t)
        handles.append(pickle.dumps((fn.__name__, args)).hex())
    with tempfile.TemporaryDirectory(prefix="kopt-probe-") as tmp:
        for r in (1, 2):
            print(f"== round {r}", flush=True)
            one_process("plain", None, handles)
            one_process("ncu", Path(tmp) / f"ipc{r}.csv", handles)


if __name__ == "__main__":
    child() if sys.argv[1:] == ["child"] else main()
