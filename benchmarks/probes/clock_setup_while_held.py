"""Probe (issue 44): is Nsight Compute's set-up at a process's first launch paid again after a launch
that failed while another process held the profiler?

The clock's processes run one after another: a process that has launched under Nsight Compute holds
it until it has left, and another's launches fail meanwhile ('a driver resource was unavailable',
H100). Each pays the set-up (0.75-0.85 s on the H200) at its first launch, five of them in turn, 4.3 s
of rule `measure` (docs/runs/h200-turnaround-41341a3/). If a launch made while the profiler is held
fails quickly and leaves the expensive part of the set-up done, each clock process could make such
a throw-away launch before its kernel is imported (as the first process's warm-up launch is, kept
out of the record by position and name), and pay only the cheap part in its turn.

Three processes under the deciding clock's ncu command (kopt.profilers.ncu.clock_command), each
ordered step by step through its stdin, each step timed (synchronized) and its error kept:

- alone: context, launch, launch, leave (the set-up alone, then a launch's own cost);
- holder: context, launch (it now holds the profiler), then it waits;
- waiter: context, a launch while the holder holds (time, error), a second one; then the holder
  leaves (its Nsight Compute gone), and the waiter's next launch (the set-up again, or not?) and
  three more; then whether its record holds the launches made after the holder left.

And one plain process (no ncu): context, launch. Then where a clock process's first order of a
config goes (its `order config`, 120-140 ms a config in `docs/runs/h200-bound-host-work/`, against
under 40 ms for a later config in the timing process): a process, plain and under ncu, opens tensors
of this process's by CUDA IPC, as the arena is opened (1 MiB, then 1 GiB, then another 1 MiB). Two
rounds.

    source benchmarks/gpu_env.sh; timeout -s INT -k 10 150 python3 benchmarks/probes/clock_setup_while_held.py
"""

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def child() -> None:
    """Steps from stdin ('context', 'launch', 'leave'), one JSON line each on stdout."""
    torch = None
    x = None
    for line in sys.stdin:
        step = line.strip()
        t0, error = time.perf_counter(), None
        try:
            if step == "context":
                import torch

                x = torch.zeros(1 << 20, device="cuda")
                torch.cuda.synchronize()
            elif step == "launch":
                x.add_(1)
                torch.cuda.synchronize()
            elif step.startswith("ipc "):
                import pickle

                import torch.multiprocessing.reductions as red

                fn, args = pickle.loads(bytes.fromhex(step.split()[1]))
                getattr(red, fn)(*args).sum()
                torch.cuda.synchronize()
                step = f"ipc {args[1]}"  # noqa: PLW2901 - the step as printed: its shape
            elif step == "leave":
                print(json.dumps({"step": step}), flush=True)
                return
        except Exception as e:  # noqa: BLE001 - the failure is what the probe reads
            error = f"{type(e).__name__}: {str(e)[:160]}"
        ms = round((time.perf_counter() - t0) * 1e3, 1)
        print(json.dumps({"step": step, "ms": ms, "error": error}), flush=True)


class Proc:
    def __init__(self, name: str, csv: Path | None):
        from kopt.profilers import ncu

        wrap = ncu.clock_command("ncu", str(csv)) if csv else []
        self.name, self.csv = name, csv
        self.p = subprocess.Popen([*wrap, sys.executable, __file__, "child"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)  # fmt: skip

    def do(self, step: str) -> dict:
        self.p.stdin.write(step + "\n")
        self.p.stdin.flush()
        for line in self.p.stdout:
            if line.startswith("{"):
                d = json.loads(line)
                print(f"  {self.name:7s} {step:8s} {d.get('ms', ''):>8} ms  {d.get('error') or ''}", flush=True)
                return d
        raise RuntimeError(f"{self.name}: ended before answering {step}")

    def leave(self) -> float:
        """The time from the order to leave until its Nsight Compute (or itself) has ended, ms."""
        t0 = time.perf_counter()
        self.do("leave")
        self.p.stdin.close()
        self.p.wait()
        return round((time.perf_counter() - t0) * 1e3, 1)

    def launches(self) -> int:
        if not self.csv or not self.csv.is_file():
            return -1
        return sum(1 for ln in self.csv.read_text(errors="replace").splitlines() if "gpu__time_duration" in ln)


def one_round(tmp: Path, r: int) -> None:
    print(f"== round {r}", flush=True)
    plain = Proc("plain", None)
    plain.do("context")
    plain.do("launch")
    plain.leave()
    alone = Proc("alone", tmp / f"alone{r}.csv")
    alone.do("context")
    alone.do("launch")
    alone.do("launch")
    print(f"  alone   leave {alone.leave()} ms; launches in its record: {alone.launches()}", flush=True)
    holder, waiter = Proc("holder", tmp / f"holder{r}.csv"), Proc("waiter", tmp / f"waiter{r}.csv")
    holder.do("context")
    waiter.do("context")
    holder.do("launch")
    waiter.do("launch")
    waiter.do("launch")
    print(f"  holder  leave {holder.leave()} ms; launches in its record: {holder.launches()}", flush=True)
    for _ in range(4):
        waiter.do("launch")
    print(f"  waiter  leave {waiter.leave()} ms; launches in its record: {waiter.launches()}", flush=True)
    text = waiter.csv.read_text(errors="replace") if waiter.csv.is_file() else ""
    said = [ln for ln in text.splitlines() if ln.startswith("==")]
    print("  waiter's Nsight Compute said: " + " | ".join(said)[:600], flush=True)


def ipc_opens(tmp: Path, r: int) -> None:
    import pickle

    import torch
    import torch.multiprocessing.reductions as red

    shared = [torch.ones(n, device="cuda") for n in (1 << 18, 1 << 28, 1 << 18)]
    handles = []
    for t in shared:
        fn, args = red.reduce_tensor(t)
        handles.append(pickle.dumps((fn.__name__, args)).hex())
    for name, csv in (("plain", None), ("ncu", tmp / f"ipc{r}.csv")):
        p = Proc(f"ipc-{name}", csv)
        p.do("context")
        for h in handles:
            p.do(f"ipc {h}")
        p.leave()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="kopt-probe-") as tmp:
        for r in (1, 2):
            one_round(Path(tmp), r)
            ipc_opens(Path(tmp), r)


if __name__ == "__main__":
    child() if sys.argv[1:] == ["child"] else main()
