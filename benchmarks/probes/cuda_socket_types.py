"""Probe: which unix sockets (type, path) does a process hold after CUDA starts, and after it opens a
buffer another process exported over CUDA IPC? The syscall filter's "stream only" broke CUDA's start
(docs/runs/h200-syscall-filter/): which type does CUDA make, and does it send to an address?

    source benchmarks/gpu_env.sh; timeout -s INT -k 5 60 python3 benchmarks/probes/cuda_socket_types.py
"""

import os
import sys
from pathlib import Path

import torch

TYPES = {"0001": "stream", "0002": "datagram", "0005": "seqpacket"}


def held_unix_sockets(pid: int) -> list[str]:
    """Each unix socket ``pid`` holds: its type and path (``@`` for abstract), from /proc/net/unix."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        target = os.readlink(f"/proc/{pid}/fd/{fd}") if os.path.exists(f"/proc/{pid}/fd/{fd}") else ""
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    rows = []
    for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
        cols = line.split()
        if cols[6] in inodes:
            rows.append(f"{TYPES.get(cols[4], cols[4])} state {cols[5]} {cols[7] if len(cols) > 7 else '(unnamed)'}")
    return sorted(rows)


def main() -> None:
    print("before CUDA:", held_unix_sockets(os.getpid()))
    torch.cuda.init()
    x = torch.ones(1 << 20, device="cuda")
    print("after CUDA starts:", held_unix_sockets(os.getpid()))
    ctx = torch.multiprocessing.get_context("spawn")
    q = ctx.SimpleQueue()
    child = ctx.Process(target=_child, args=(q,))
    child.start()
    q.put(x)
    print("child:", q.get() if child.join(60) is None else "timeout")
    print("parent after export:", held_unix_sockets(os.getpid()))


def _child(q) -> None:
    torch.cuda.init()
    before = held_unix_sockets(os.getpid())
    t = q.get()
    t.mul_(2)
    torch.cuda.synchronize()
    q.put(f"after CUDA starts {before}; after opening the IPC buffer {held_unix_sockets(os.getpid())}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
