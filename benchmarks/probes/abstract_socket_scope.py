"""Probe (the threat model's open items): may the kernel's process have abstract unix sockets scoped, TCP refused, socket paths hidden?

Landlock ABI 6 can refuse a sandboxed process ``connect`` to an abstract unix socket made outside
its domain (LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET). On the GPU the kernel's process holds such
sockets: CUDA's ``@cuda-uvmfd-<ns>-<pid>@`` and, under Nsight Compute, ``@nv_target_process_<pid>``
(docs/runs/h200-gpu-tests-197ae20/ncu_tmpdir_fds.txt). The judge hands the kernel its buffers over
CUDA IPC (kopt.measure.arena: ``reduce_tensor``), which may connect to the exporter's (the
judge's) socket. Here a process with the scopes alone (no file rules: not kopt's whole sandbox),
applied before its CUDA starts as kopt.inside.confined applies the sandbox, opens a buffer and an
event the parent exported, reads and writes the buffer and launches, plain and under the deciding
clock's Nsight Compute command, for each scope: none, signals, signals and abstract sockets, and
those with TCP refused (Landlock ABI 4: no TCP bind or connect at all; the sandbox grants TCP
today, and Nsight Compute has a ``--port`` for its front end and targets: does its clock need
one?), and those with every unix socket with a path hidden (kopt.inside.socket_paths, which
kopt's sandbox now applies itself: do CUDA or Nsight Compute's clock need one?).

    source benchmarks/gpu_env.sh; timeout -s INT -k 10 300 python3 benchmarks/probes/abstract_socket_scope.py
"""

import contextlib
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
from torch.multiprocessing.reductions import reduce_tensor

from kopt.profilers.ncu import clock_command

# (scoped, handled_access_net, socket paths hidden, syscall filter): LANDLOCK_SCOPE_*, LANDLOCK_ACCESS_NET_{BIND,CONNECT}_TCP,
# and kopt.inside.socket_paths's mount namespace with /dev/null over every socket path
SCOPES = {
    "none": (0, 0, 0, 0),
    "signals": (1 << 1, 0, 0, 0),
    "signals+abstract sockets": (1 << 1 | 1 << 0, 0, 0, 0),
    "those+no TCP": (1 << 1 | 1 << 0, 1 << 0 | 1 << 1, 0, 0),
    "those+socket paths hidden": (1 << 1 | 1 << 0, 1 << 0 | 1 << 1, 1, 0),
    # and kopt.inside.syscall_filter, bits: 1 the filter (no socket but a unix one, no mount API, ...),
    # 2 strict (no connect, no unix datagram; the first form's "stream only", which refused seqpacket
    # sockets too, broke CUDA's start: docs/runs/h200-syscall-filter/), 4 every capability dropped
    # (kopt.inside.capabilities: do Nsight Compute's counters work without CAP_SYS_ADMIN?)
    "those+syscall filter": (1 << 1 | 1 << 0, 1 << 0 | 1 << 1, 1, 1),
    "those+strict filter": (1 << 1 | 1 << 0, 1 << 0 | 1 << 1, 1, 1 | 2),
    "those+strict filter+no capabilities": (1 << 1 | 1 << 0, 1 << 0 | 1 << 1, 1, 1 | 2 | 4),
}

CHILD = r"""
import ctypes, os, pickle, struct, sys
scoped, net, hiding, filtered, path = *map(int, sys.argv[1:5]), sys.argv[5]
if hiding:
    from kopt.inside import socket_paths
    print(f"scope: {socket_paths.hide()} of {' '.join(socket_paths.listed())[:300]}", flush=True)
if scoped:
    libc = ctypes.CDLL(None, use_errno=True)
    attr = struct.pack("QQQ", 0, net, scoped)
    fd = libc.syscall(ctypes.c_long(444), attr, ctypes.c_long(len(attr)), ctypes.c_long(0))
    ok = fd >= 0 and libc.prctl(38, 1, 0, 0, 0) == 0 and libc.syscall(ctypes.c_long(446), ctypes.c_long(fd), ctypes.c_long(0)) == 0
    print("scope applied" if ok else f"scope failed errno {ctypes.get_errno()}", flush=True)
if filtered:
    from kopt.inside import capabilities, syscall_filter
    print("scope:", syscall_filter.apply(bool(filtered & 2)), flush=True)
    if filtered & 4:
        print("scope:", capabilities.drop(), flush=True)
import torch
from torch.multiprocessing.reductions import rebuild_cuda_tensor
with open(path, "rb") as f:
    args, event = pickle.load(f)
t = rebuild_cuda_tensor(*args)
placed = torch.cuda.Event.from_ipc_handle(torch.cuda.current_device(), event)
placed.synchronize()
before = float(t.double().sum())
t.mul_(2.0)
torch.cuda.synchronize()
print(f"buffer read {before:.0f}, doubled in place", flush=True)
"""


def run(scope: tuple[int, ...], path: str, under_ncu: bool, folder: str) -> str:
    cmd = [sys.executable, "-c", CHILD, *map(str, scope), path]
    log = os.path.join(folder, f"ncu-{'-'.join(map(str, scope))}.csv")
    if under_ncu:
        cmd = [*clock_command(shutil.which("ncu"), log), *cmd]
    start = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "did not end in 60 s"
    out = [ln for ln in (p.stdout + p.stderr).splitlines() if "scope" in ln or "buffer" in ln or "rror" in ln]
    launches = ""
    if under_ncu and os.path.exists(log):
        rows = Path(log).read_text().count("gpu__time_duration")
        launches = f"; ncu record: {rows} launch row(s)"
    return f"exit {p.returncode} in {time.perf_counter() - start:.1f} s: {' | '.join(out[-6:])}{launches}"


def main() -> None:
    print(torch.cuda.get_device_name(), "kernel", os.uname().release)
    with contextlib.suppress(OSError):  # whether the driver keeps the GPU's counters to admin users
        print(*(ln for ln in Path("/proc/driver/nvidia/params").read_text().splitlines() if "Profiling" in ln))
    only = sys.argv[1:]  # names of SCOPES to run (all when none)
    with tempfile.TemporaryDirectory() as folder:
        for under_ncu in (False, True) if shutil.which("ncu") else (False,):
            for name, scope in SCOPES.items():
                if only and name not in only:
                    continue
                buf = torch.ones(1 << 20, device="cuda")
                placed = torch.cuda.Event(interprocess=True)
                placed.record()
                path = os.path.join(folder, "handle.pkl")
                with open(path, "wb") as f:
                    pickle.dump((reduce_tensor(buf)[1], placed.ipc_handle()), f)
                line = run(scope, path, under_ncu, folder)
                torch.cuda.synchronize()
                seen = float(buf.sum())
                print(f"{'ncu ' if under_ncu else 'plain'} {name:26s} {line}; parent reads {seen:.0f}", flush=True)


if __name__ == "__main__":
    main()
