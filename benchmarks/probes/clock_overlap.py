"""Probe (issue 44): may a clock process's set-up and leave overlap the in-process timing?

The clock's processes run one after another (a process that has launched under Nsight Compute
holds it from every other): per config its set-up at the first launch (0.63 s on the H100), its
calls, its leave (0.35-0.45 s). The in-process timing runs in another process, not under ncu. If
process k's leave and process k+1's set-up ran while the timing process timed config k+1, the
clock would cost its calls alone per config; but only if that work does not disturb the timing.

A timer process (plain, no ncu) times batches of back-to-back softmax calls on 262144x256 fp32,
each batch by the host's wall clock around it (as the bound's batches) and each call by CUDA
events, for the whole probe. Meanwhile the parent runs, one after another, clock-like processes
under the deciding clock's ncu command: each imports torch, makes its context, makes the warm-up
launch, imports the softmax example's v1, makes 16 calls and leaves (os._exit, as
kopt.inside.serve). Printed: per clock process the time of each step and of its leave (its exit
seen, then ncu's), and the timer's batches inside the clock processes' set-up and leave windows
against those in quiet windows before and after (median, spread).

    source benchmarks/gpu_env.sh; python3 benchmarks/probes/clock_overlap.py
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KERNEL = "examples/softmax/kernels/v1.py"
BATCH = 10


def timer(stop_path: str, out_path: str) -> None:
    import torch

    x = torch.randn(262144, 256, device="cuda")
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(BATCH)]
    rows = []
    for _ in range(20):
        torch.softmax(x, -1)
    torch.cuda.synchronize()
    print("timer ready", flush=True)
    while not os.path.exists(stop_path):
        t0 = time.perf_counter()
        for a, b in ev:
            a.record()
            torch.softmax(x, -1)
            b.record()
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        rows.append([time.time(), (t1 - t0) * 1e6 / BATCH, statistics.median(a.elapsed_time(b) * 1e3 for a, b in ev)])
        time.sleep(0.002)
    Path(out_path).write_text(json.dumps(rows))


def clock_child() -> None:
    t = [time.perf_counter()]

    def say(step: str) -> None:
        import torch

        torch.cuda.synchronize()
        now = time.perf_counter()
        print(json.dumps({"step": step, "ms": round((now - t[0]) * 1e3, 1), "at": time.time()}), flush=True)
        t[0] = now

    import torch

    torch.empty(1, device="cuda")
    say("context")
    torch.ones(1, device="cuda")
    say("warm-up launch")
    import importlib.util

    spec = importlib.util.spec_from_file_location("k", KERNEL)
    k = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(k)
    say("import kernel")
    x = torch.randn(262144, 256, device="cuda")
    y = torch.empty_like(x)
    k.run_kernel(x, y)
    say("first call")
    for _ in range(15):
        k.run_kernel(x, y)
    say("15 calls")
    print(json.dumps({"step": "leave", "at": time.time(), "pid": os.getpid()}), flush=True)
    sys.stdout.flush()
    os._exit(0)


def one_clock_process(tmp: str, i: int) -> dict:
    from kopt.profilers import ncu

    cmd = [*ncu.clock_command("ncu", f"{tmp}/clock_{i}.csv"), sys.executable, __file__, "clock"]
    start = time.time()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    steps, pid, left_at = [], None, None
    for line in p.stdout:
        if line.startswith("{"):
            d = json.loads(line)
            steps.append(d)
            if d["step"] == "leave":
                pid, left_at = d["pid"], d["at"]
                break
    while pid and _alive(pid):
        time.sleep(0.002)
    target_gone = time.time()
    p.stdout.read()
    p.wait()
    ncu_gone = time.time()
    return {
        "start": start,
        "steps": {d["step"]: d.get("ms") for d in steps},
        "leave_target_ms": round((target_gone - left_at) * 1e3, 1) if left_at else None,
        "leave_ncu_ms": round((ncu_gone - left_at) * 1e3, 1) if left_at else None,
        "calls_from": next((d["at"] for d in steps if d["step"] == "import kernel"), None),
        "calls_to": left_at,
        "end": ncu_gone,
        "rc": p.returncode,
    }


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def summary(name: str, rows: list) -> str:
    if not rows:
        return f"{name}: no batches"
    wall = [r[1] for r in rows]
    evs = [r[2] for r in rows]
    q = lambda v: statistics.quantiles(v, n=10) if len(v) > 2 else [min(v)] * 9  # noqa: E731
    return (
        f"{name}: {len(rows)} batches; wall per call median {statistics.median(wall):.2f} us "
        f"(p10 {q(wall)[0]:.2f}, p90 {q(wall)[-1]:.2f}, max {max(wall):.2f}); events median "
        f"{statistics.median(evs):.2f} us (p10 {q(evs)[0]:.2f}, p90 {q(evs)[-1]:.2f}, max {max(evs):.2f})"
    )


def main() -> None:
    tmp = tempfile.mkdtemp()
    stop, rows_path = f"{tmp}/stop", f"{tmp}/rows.json"
    t = subprocess.Popen([sys.executable, __file__, "timer", stop, rows_path], stdout=subprocess.PIPE, text=True)
    t.stdout.readline()
    time.sleep(3)
    quiet_before = (time.time() - 3, time.time())
    runs = [one_clock_process(tmp, i) for i in range(4)]
    mid = time.time()
    time.sleep(3)
    quiet_after = (mid, time.time())
    Path(stop).touch()
    t.wait()
    rows = json.loads(Path(rows_path).read_text())
    for r in runs:
        print(json.dumps({k: v for k, v in r.items() if k not in ("start", "end", "calls_from", "calls_to")}))
    inside = lambda a, b: [x for x in rows if a <= x[0] <= b]  # noqa: E731
    setup = [x for r in runs if r["calls_from"] for x in inside(r["start"], r["calls_from"])]
    leave = [x for r in runs if r["calls_to"] for x in inside(r["calls_to"], r["end"])]
    calls = [x for r in runs if r["calls_from"] for x in inside(r["calls_from"], r["calls_to"])]
    print(summary("quiet before", inside(*quiet_before)))
    print(summary("clock processes' set-up (start to kernel imported)", setup))
    print(summary("clock processes' calls (contended: not in the design)", calls))
    print(summary("clock processes' leave", leave))
    print(summary("quiet after", inside(*quiet_after)))


if __name__ == "__main__":
    if sys.argv[1:2] == ["timer"]:
        timer(sys.argv[2], sys.argv[3])
    elif sys.argv[1:2] == ["clock"]:
        clock_child()
    else:
        main()
