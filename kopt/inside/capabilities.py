"""Root's capabilities, dropped from the kernel's process after its sandbox (kopt.inside.sandbox).

On the GPU machines and in CI the kernel runs as root. Landlock and the syscall filter
(kopt.inside.syscall_filter) refuse the ways out that reviews found; every other power of root's
they do not name (a raw I/O port, a device node's owner, a network interface's settings, a file
read past its mode, ...) goes with the capabilities: the bounding set emptied (an exec, as root,
gets none back), the ambient set cleared, the effective, permitted and inheritable sets zeroed.

Kept where the GPU's driver lets only CAP_SYS_ADMIN read the performance counters
(``RmProfilingAdminOnly: 1`` in /proc/driver/nvidia/params): Nsight Compute's clock reads them in
this process. With it 0, CUDA IPC and that clock worked with every capability dropped (H200:
docs/runs/h200-syscall-filter/). Not covered: the uid stays root's, so the files root owns (the
results) may still have their mode and times changed (a uid of the kernel's own would cover it).
"""

from __future__ import annotations

import ctypes
import struct
from pathlib import Path

PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
LINUX_CAPABILITY_VERSION_3 = 0x20080522
DRIVER_PARAMS = "/proc/driver/nvidia/params"


def held(field: str = "CapEff") -> int:
    """This process's capabilities in ``field`` of /proc/self/status, a bit each: ``CapEff`` the
    effective ones, ``CapPrm`` the permitted ones, ``CapBnd`` the bounding set (what an exec as root would get back)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1], 16)
    return 0


def counters_need_admin(params: str = DRIVER_PARAMS) -> bool:
    """Whether the NVIDIA driver lets only CAP_SYS_ADMIN read the performance counters."""
    try:
        return "RmProfilingAdminOnly: 1" in Path(params).read_text()
    except OSError:
        return False


def drop() -> str:
    """Drop every capability this process and the programs it runs could hold; the sandbox line's part."""
    if counters_need_admin():
        return "capabilities kept (the driver's RmProfilingAdminOnly: 1: Nsight Compute's counters need CAP_SYS_ADMIN)"
    if not held() and not held("CapPrm"):  # and no_new_privs (the sandbox's) lets an exec gain none
        return "no capabilities held"
    libc = ctypes.CDLL(None, use_errno=True)
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for cap in range(last + 1):
        libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # needs CAP_SETPCAP: before the sets below
    libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = ctypes.create_string_buffer(struct.pack("=Ii", LINUX_CAPABILITY_VERSION_3, 0), 8)
    libc.capset(header, ctypes.create_string_buffer(24))  # two 32-bit halves of each set, all zero
    left, bounding = held(), held("CapBnd")
    if left or bounding:
        return f"capabilities NOT all dropped (effective {left:#x}, bounding {bounding:#x})"
    return "every capability dropped"
