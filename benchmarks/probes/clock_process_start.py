"""Probe (issue 44): where a clock process's start-up goes, and whether two can be set up at once.

1. Its first order of a config. In rule `measure`'s clock each config's process answers its `config`
   order (the arena's CUDA IPC handle opened, its views made) in 120-140 ms, where a later config's
   order in the timing process takes under 40 ms (`docs/runs/h200-bound-host-work/bench_phases_trace.txt`):
   five of those are 0.6 s of the clock, one after another. A process, plain and then under the
   deciding clock's ncu command (kopt.profilers.ncu.clock_command), makes its CUDA context (no
   launch, as kopt.inside.serve._clock_context), then opens tensors of this process's by CUDA IPC
   as the arena is opened (1 MiB, 1 GiB, another 1 MiB, no launch): the first open, or the size?
2. Two processes under ncu: the holder makes its warm-up launch (Nsight Compute's set-up, 0.75-0.85 s
   on the H200) and waits; the waiter then makes its own. With each process's own TMPDIR (as the
   harness starts them today: its scratch) Nsight Compute refused and shut the waiter down
   (`docs/runs/h100-clock/3-h200-concurrent/`). Does a TMPDIR the two share (Nsight Compute keeps
   its lock file there) make the waiter wait instead, and is its set-up then paid while it waits or
   after? Printed: each step's time and error, each record as the judge reads it.

    source benchmarks/gpu_env.sh; timeout -s INT -k 10 150 python3 benchmarks/probes/clock_process_start.py
"""

import contextlib
import json
import os
import pickle
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path


def child() -> None:
    """Steps from stdin ('context', 'warm', 'launch', 'ipc <hex>', 'sandbox <dir> [<also writable>...]', 'spawn', 'fds', 'leave'), one JSON line each."""
    import torch
    import torch.multiprocessing.reductions as red

    for line in sys.stdin:
        step, t0, error = line.strip(), time.perf_counter(), None
        try:
            if step == "context":
                torch.empty(1, device="cuda")
            elif step == "warm":  # as kopt.inside.serve._warm_up
                with torch.cuda.nvtx.range("kopt-clock"):
                    torch.ones(1, device="cuda")
            elif step == "launch":
                torch.ones(1 << 20, device="cuda").add_(1)
            elif step.startswith("ipc "):
                fn, args = pickle.loads(bytes.fromhex(step.split()[1]))
                getattr(red, fn)(*args)  # opened, no launch (one under ncu would pay its set-up here)
                step = f"ipc {tuple(args[1])}"
            elif step.startswith("sandbox "):  # kopt's own, writes only under the given folder (and /dev...)
                from kopt.inside import sandbox

                os.environ["KOPT_KERNEL_WRITABLE"] = os.pathsep.join(step.split()[2:])  # and these
                error = None if sandbox.apply(step.split()[1]).startswith("landlock") else "no sandbox"
                step = "sandbox"
            elif step == "spawn":  # a program the target starts, under ncu as Triton's gcc is
                import subprocess

                codes = [
                    subprocess.run(c, capture_output=True).returncode for c in (["true"], [sys.executable, "-c", ""])
                ]
                error = None if codes == [0, 0] else f"exit codes {codes}"
            elif step == "fds":  # what the profiler handed this process open (Landlock checks paths at open only)
                error = "; ".join(_open_files())
            elif step == "leave":
                return
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - the failure is what the probe reads
            error = f"{type(e).__name__}: {str(e)[:160]}"
        ms = round((time.perf_counter() - t0) * 1e3, 1)
        print(json.dumps({"step": step, "ms": ms, "error": error}), flush=True)


def _open_files() -> list[str]:
    """This process's open descriptors that name a file or folder, with their access mode, and its
    unix sockets with their names (``@``: abstract, which Landlock scopes only if asked: does
    Nsight Compute's injection talk to its front end so?)."""
    out, unix = [], _unix_socket_names()
    for fd in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
            flags = int(Path(f"/proc/self/fdinfo/{fd}").read_text().split("flags:")[1].split()[0], 8)
        except (OSError, IndexError, ValueError):
            continue
        if target.startswith("/"):
            out.append(f"{fd}:{target}:{('r', 'w', 'rw')[flags & 3] if flags & 3 < 3 else '?'}")
        elif target.startswith("socket:["):
            out.append(f"{fd}:{target}:{unix.get(target[8:-1], 'not unix')}")
    return out


def _unix_socket_names() -> dict[str, str]:
    """inode -> name of every unix socket on the machine (/proc/net/unix; '' when unnamed)."""
    names = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
            parts = line.split()
            if len(parts) >= 7:
                names[parts[6]] = parts[7] if len(parts) > 7 else "unnamed"
    return names


class Proc:
    """A child (``child``): steps in, one JSON line out each; under the deciding clock's ncu
    command (``extra``: more of its options) where ``csv`` is given, with ``tmpdir`` its TMPDIR
    and ``target_tmp`` its target's (``env TMPDIR=...`` between them) where given."""

    def __init__(self, name: str, csv: Path | None, tmpdir: str | None = None, extra=(), target_tmp=None):
        from kopt.profilers import ncu

        wrap = [*ncu.clock_command("ncu", str(csv)), *extra] if csv else []
        target = [*(["env", f"TMPDIR={target_tmp}"] if target_tmp else []), sys.executable, __file__, "child"]
        env = {**os.environ, **({"TMPDIR": tmpdir} if tmpdir else {})}
        self.name, self.csv = name, csv
        self.p = subprocess.Popen([*wrap, *target], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, env=env)  # fmt: skip

    def do(self, step: str) -> float | None:
        t0 = time.perf_counter()
        try:
            self.p.stdin.write(step + "\n")
            self.p.stdin.flush()
            d = json.loads(next(ln for ln in self.p.stdout if ln.startswith("{")))
        except (StopIteration, BrokenPipeError, OSError):
            ms = round((time.perf_counter() - t0) * 1e3, 1)
            d = {"step": step[:28], "ms": ms, "error": f"the process ended (exit {self.p.wait()})"}
        print(f"  {self.name:7s} {d['step']:28s} {d['ms']:>8} ms  {d['error'] or ''}", flush=True)
        return None if d["error"] else d["ms"]

    def leave(self) -> None:
        with contextlib.suppress(OSError):
            self.p.stdin.write("leave\n")
            self.p.stdin.close()
        self.p.wait()
        if self.csv:
            print(f"  {self.name:7s} record: {_record(self.csv)}", flush=True)


def _record(csv: Path) -> str:
    from kopt.measure.faults import KernelFault
    from kopt.measure.outside_clock import read_record

    try:
        return str([str(ln["kernel"])[:32] for ln in read_record(csv, warmed=False)])
    except KernelFault as e:
        return f"unreadable: {e}"


def ipc_opens(tmp: Path, r: int) -> None:
    import torch
    import torch.multiprocessing.reductions as red

    shared = [torch.ones(n, device="cuda") for n in (1 << 18, 1 << 28, 1 << 18)]  # 1 MiB, 1 GiB, 1 MiB
    handles = []
    for t in shared:
        fn, args = red.reduce_tensor(t)
        handles.append(pickle.dumps((fn.__name__, args)).hex())
    for name, csv in (("plain", None), ("ncu", tmp / f"ipc{r}.csv")):
        p = Proc(name, csv)
        for step in ["context", *(f"ipc {h}" for h in handles)]:
            p.do(step)
        p.leave()


def two_at_once(tmp: Path, r: int, shared_tmpdir: bool) -> None:
    print(f"  -- two processes under ncu, {'one TMPDIR shared' if shared_tmpdir else 'a TMPDIR each'}", flush=True)
    dirs = [tmp / f"t{r}{shared_tmpdir}{i}" for i in range(2)]
    for d in dirs:
        d.mkdir()
    holder = Proc("holder", tmp / f"holder{r}{shared_tmpdir}.csv", str(dirs[0]))
    waiter = Proc("waiter", tmp / f"waiter{r}{shared_tmpdir}.csv", str(dirs[0 if shared_tmpdir else 1]))
    holder.do("context")
    waiter.do("context")
    holder.do("warm")
    leaving = threading.Timer(3.0, holder.leave)  # the holder leaves 3 s on: does the waiter wait for it?
    leaving.start()
    waiter.do("warm")
    leaving.join()
    waiter.do("launch")
    waiter.do("launch")
    waiter.leave()


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="kopt-probe-") as tmp:
        for r in (1, 2):
            print(f"== round {r}", flush=True)
            ipc_opens(Path(tmp), r)
            two_at_once(Path(tmp), r, shared_tmpdir=False)
            two_at_once(Path(tmp), r, shared_tmpdir=True)


if __name__ == "__main__":
    child() if sys.argv[1:] == ["child"] else main()
