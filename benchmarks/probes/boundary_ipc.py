"""Probe of what the judge / kernel-process split relies on, on one GPU machine (2026-11-25, H100:
landlock ABI 7, uid 0; the arena's 20 MiB segment held the arena and one inactive block, and the
other process's writes were seen by the owner): a tensor allocated in a private torch.cuda.MemPool
shared with another process by CUDA IPC, landlock's ABI, ptrace_scope, uid.

    python3 benchmarks/probes/boundary_ipc.py
"""

import ctypes
import os
import pickle
import subprocess
import sys
from pathlib import Path

import torch
import torch.multiprocessing.reductions as red


def landlock_abi():
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.syscall(444, None, 0, 1), ctypes.get_errno()


def other_process(payload: str) -> None:
    fn, args = pickle.loads(bytes.fromhex(payload))
    t = getattr(red, fn)(*args)
    t.fill_(7.0)
    torch.cuda.synchronize()
    print("child wrote", t.shape, t.device, flush=True)


def read(path: str) -> str | None:
    return Path(path).read_text().strip() if Path(path).exists() else None


def main() -> None:
    print("torch", torch.__version__, "uid", os.getuid(), "landlock", landlock_abi(), os.uname().release)
    print("ptrace_scope", read("/proc/sys/kernel/yama/ptrace_scope"), "lsm", read("/sys/kernel/security/lsm"))
    pool = torch.cuda.MemPool()
    with torch.cuda.use_mem_pool(pool):
        a = torch.empty(3 * 2**20 + 16, dtype=torch.uint8, device="cuda")
    other = torch.zeros(1000, device="cuda")
    a.zero_()
    segs = [
        s
        for s in torch.cuda.memory_snapshot()
        if any(b["address"] <= a.data_ptr() < b["address"] + b["size"] for b in s["blocks"])
    ]
    print(
        "segment of the arena:", [(s["total_size"], len(s["blocks"]), [b["state"] for b in s["blocks"]]) for s in segs]
    )
    f = a.view(torch.float32)
    fn, args = red.reduce_tensor(f)
    payload = pickle.dumps((fn.__name__, args)).hex()
    r = subprocess.run([sys.executable, __file__, payload], capture_output=True, text=True)
    print(r.stdout, r.stderr[-2000:])
    torch.cuda.synchronize()
    print("owner sees", float(f[0]), float(f[-1]), "other untouched", float(other.abs().sum()))


if __name__ == "__main__":
    other_process(sys.argv[1]) if len(sys.argv) > 1 else main()
