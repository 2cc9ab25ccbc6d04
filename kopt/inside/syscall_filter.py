"""A seccomp filter on the kernel's process: the calls Landlock leaves open to reach outside.

Landlock (kopt.inside.sandbox) checks paths, TCP's bind and connect, signals and abstract sockets.
A review (CPU, Linux 6.18, ABI 7) reached a daemon's listener outside the sandbox anyway: over TCP
with MSG_FASTOPEN (no connect call) or MPTCP (not Landlock's TCP), over UDP, and as root by a
mount of its own that the socket-path cover is not on (``open_tree``, ``fsmount``: Landlock checks
neither). So, on x86_64 and aarch64, the process may make no socket but a unix one (no TCP, UDP,
MPTCP, raw or netlink socket: none of them can be set up through io_uring either, refused too) and
call none of the mount API, ``unshare`` or ``setns``; a call of another architecture's table (i386's
``int 0x80``, x32) is refused whole. Refused calls fail with EPERM (EACCES for a socket), never
kill: a library that probes them goes on.

Not applied yet: the sandbox applies it once a GPU run shows CUDA IPC and Nsight Compute's clock
work under it (benchmarks/probes/abstract_socket_scope.py, its "those+syscall filter" and
"those+strict filter"); the CPU tests show what it refuses (tests/measure/test_syscall_filter.py).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 22, 2
# BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_ALU|AND|K, BPF_RET|K
LD_ABS, JEQ, JGE, AND, RET = 0x20, 0x15, 0x35, 0x54, 0x06
ALLOW, ERRNO = 0x7FFF0000, 0x00050000
NR, ARCH, ARG0, ARG1 = 0, 4, 16, 24  # offsets in struct seccomp_data (the low word of each argument)
AF_UNIX, SOCK_TYPE_MASK = 1, 0xF
X32_BIT = 0x40000000
# the generic table's numbers (the same on both): io_uring_setup, open_tree .. fspick, mount_setattr, open_tree_attr
_NEW = (425, 428, 429, 430, 431, 432, 433, 442, 467)
# machine: (AUDIT_ARCH_*, socket, connect, the rest refused: mount, umount2, pivot_root, unshare, setns)
TABLES = {
    "x86_64": (0xC000003E, 41, 42, (165, 166, 155, 272, 308, *_NEW)),
    "aarch64": (0xC00000B7, 198, 203, (40, 39, 41, 97, 268, *_NEW)),
}


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def program(machine: str, deny_connect: bool = False, stream_only: bool = False) -> list[bytes]:
    """The filter for ``machine``: ``deny_connect`` refuses every connect (a unix socket's too);
    ``stream_only`` refuses unix datagram and seqpacket sockets (a datagram is sent to a path
    without a connect)."""
    arch, socket_nr, connect_nr, refused = TABLES[machine]
    prog = [_op(LD_ABS, ARCH), _op(JEQ, arch, 1, 0), _op(RET, ERRNO | errno.ENOSYS), _op(LD_ABS, NR)]
    if machine == "x86_64":
        prog += [_op(JGE, X32_BIT, 0, 1), _op(RET, ERRNO | errno.ENOSYS)]
    for nr in (*refused, *((connect_nr,) if deny_connect else ())):
        prog += [_op(JEQ, nr, 0, 1), _op(RET, ERRNO | errno.EPERM)]
    block = [_op(LD_ABS, ARG0), _op(JEQ, AF_UNIX, 1, 0), _op(RET, ERRNO | errno.EACCES)]
    if stream_only:
        block += [_op(LD_ABS, ARG1), _op(AND, SOCK_TYPE_MASK), _op(JEQ, 1, 1, 0), _op(RET, ERRNO | errno.EACCES)]
    block.append(_op(RET, ALLOW))
    return [*prog, _op(JEQ, socket_nr, 0, len(block)), *block, _op(RET, ALLOW)]


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def apply(deny_connect: bool = False, stream_only: bool = False) -> str:
    """Install the filter on this thread and the threads and processes it starts after (needs
    no_new_privs, which the sandbox sets first); the sandbox line's part."""
    machine = platform.machine()
    if machine not in TABLES:
        return f"NO syscall filter (no table for {machine})"
    code = b"".join(program(machine, deny_connect, stream_only))
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _Fprog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        return f"NO syscall filter ({errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())})"
    return "no socket but a unix one, no mount API, unshare or setns" + ("; no connect" if deny_connect else "")
