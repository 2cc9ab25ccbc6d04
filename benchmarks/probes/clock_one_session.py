"""Probe (issue 31): can one Nsight Compute session hold every config's clock process?

Today each config's process runs under an ncu of its own, one after another, because a process
that has launched under one ncu holds the GPU's profiling from every other ncu until it has left
(H100: 'a driver resource was unavailable'). Here one ncu (the deciding clock's command) wraps a
launcher that starts N children at once. Each child imports torch, makes its context, makes one
warm-up launch (a fill) and says 'ready'; then, in turn, when told, imports the softmax example's
v1 and calls it 30 times on 262144x256 fp32 (host time of each call, synchronized), and stays
alive, idle, until every child has had its turn. Printed: each child's ready time and warm-up
fill, its first, second and other calls, whether any launch failed, and from Nsight Compute's
record the launches per process and any error. Scenario 'together': the warm-ups all at once;
'one-by-one': each warm-up after the previous child's.

    source benchmarks/gpu_env.sh; python3 benchmarks/probes/clock_one_session.py
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

KERNEL = "examples/softmax/kernels/v1.py"
N = 6


def child() -> None:
    t0 = time.perf_counter()
    import torch

    torch.empty(1, device="cuda")
    ctx = time.perf_counter()
    torch.ones(1, device="cuda")
    torch.cuda.synchronize()
    fill = time.perf_counter()
    say({"ready": True, "context_s": round(ctx - t0, 2), "fill_ms": round((fill - ctx) * 1e3, 1)})
    sys.stdin.readline()  # go
    import importlib.util

    spec = importlib.util.spec_from_file_location("k", KERNEL)
    k = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(k)
    x = torch.randn(262144, 256, device="cuda")
    y = torch.empty_like(x)
    calls = []
    try:
        for _ in range(30):
            t = time.perf_counter()
            k.run_kernel(x, y)
            torch.cuda.synchronize()
            calls.append(round((time.perf_counter() - t) * 1e3, 2))
        ok = bool(torch.allclose(y, torch.softmax(x, dim=-1), atol=1e-5))
        say({"first_ms": calls[0], "second_ms": calls[1], "rest_ms": round(sum(calls[2:]), 1), "ok": ok})
    except Exception as e:  # noqa: BLE001 - the probe reports it
        say({"failed": f"{type(e).__name__}: {e}"[:300], "calls_done": len(calls)})
    sys.stdin.readline()  # bye


def say(msg: dict) -> None:
    print(json.dumps({"pid": os.getpid(), **msg}), flush=True)


def launcher(together: bool) -> None:
    t0 = time.perf_counter()
    me = [sys.executable, __file__, "child"]
    kids, ready = [], []
    for _ in range(N):
        kids.append(subprocess.Popen(me, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True))
        if not together:
            ready.append(_read(kids[-1], t0))
    ready += [_read(k, t0) for k in kids[len(ready) :]]
    print("ready:", ready, flush=True)
    for k in kids:
        t = time.perf_counter()
        k.stdin.write("go\n")
        k.stdin.flush()
        print("turn:", _read(k, t0), f"turn {time.perf_counter() - t:.2f} s", flush=True)
    for k in kids:
        k.stdin.write("bye\n")
        k.stdin.flush()
    for k in kids:
        k.wait()
    print(f"launcher done at {time.perf_counter() - t0:.2f} s", flush=True)


def _read(k, t0) -> dict:
    line = k.stdout.readline()
    try:
        return {**json.loads(line), "at_s": round(time.perf_counter() - t0, 2)}
    except ValueError:
        return {"unreadable": line[:200]}


def main() -> None:
    from kopt.measure.boundary import triton_tools_env
    from kopt.profilers import ncu

    tmp = tempfile.mkdtemp()
    env = {**os.environ, **triton_tools_env(), "TRITON_CACHE_DIR": f"{tmp}/triton"}
    # Triton's cache warm first (plain)
    subprocess.run([sys.executable, __file__, "launcher", "one-by-one"], env=env, capture_output=True, text=True)
    for scenario in ("together", "one-by-one"):
        csv = f"{tmp}/{scenario}.csv"
        t = time.perf_counter()
        out = subprocess.run(
            [*ncu.clock_command(shutil.which("ncu"), csv), sys.executable, __file__, "launcher", scenario],
            env=env, capture_output=True, text=True,
        )  # fmt: skip
        print(f"== {scenario}: ncu session {time.perf_counter() - t:.2f} s, rc {out.returncode}")
        print(out.stdout.strip()[-6000:], out.stderr.strip()[-1500:], sep="\n")
        text = Path(csv).read_text(errors="replace") if Path(csv).exists() else ""
        errors = [ln for ln in text.splitlines() if ln.startswith(("==ERROR==", "==WARNING=="))]
        print("record errors:", errors[:5])
        try:
            launches = ncu.clock_launches(text)
            print("launches per process:", dict(Counter(ln["process"] for ln in launches)))
            firsts = {}
            for ln in launches:
                firsts.setdefault(ln["process"], ln["kernel"][:40])
            print("first launch per process:", firsts)
            print("ids in order, processes interleaved:", [ln["process"] for ln in launches][:80:8])
        except ValueError as e:
            print("record not read:", e)


if __name__ == "__main__":
    {"child": child, "launcher": lambda: launcher(sys.argv[2] == "together")}.get(
        sys.argv[1] if sys.argv[1:] else "", main
    )()
