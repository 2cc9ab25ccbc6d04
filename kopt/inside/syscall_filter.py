"""A seccomp filter on the kernel's process: the calls Landlock leaves open to reach outside.

Landlock (kopt.inside.sandbox) checks paths, TCP's bind and connect, signals and abstract sockets.
A review (CPU, Linux 6.18, ABI 7) reached a daemon's listener outside the sandbox anyway: over TCP
with MSG_FASTOPEN (no connect call) or MPTCP (not Landlock's TCP), over UDP, and as root by a
mount of its own that the socket-path cover is not on (``open_tree``, ``fsmount``: Landlock checks
neither). A second review (CPU, root, the filter's first form applied) went on: a unix datagram
socketpair around "stream only", a file opened by its handle under the cover, System V message
queues of another process's, TIOCSTI into a terminal outside (a shell ran it), a BPF program that
killed a process outside, another process's limits and scheduling (the same uid needs no
capability), the results' extended attributes and immutable flag. A third (CPU, root, this filter
applied; docs/runs/cpu-sandbox-review-32/): POSIX message queues, the uid's kernel keyring, a
lease on a file outside through a read-only descriptor, a terminal opened read-only and changed by
its ioctls, PTRACE_TRACEME, every inotify instance of the uid, ``clone3`` into another cgroup. So,
on x86_64 and aarch64, the process may make no socket or socketpair but a unix one (no TCP, UDP,
MPTCP, raw or netlink socket: none through io_uring either, refused too); call none of the mount
API, ``unshare``, ``setns``, the handle calls, System V IPC, POSIX message queues, the keyring
calls, ``inotify_init``, ``fanotify_init``, the xattr setters, chown, ``bpf`` or root's module, kexec, reboot, swap,
clock and I/O-port calls; clone into no new namespace, and not through ``clone3`` (ENOSYS: glibc
falls back to clone); take no lease and make itself traced by no one; change no limit or
scheduling but its own; and send no inode-flag ioctl and none of a terminal's that changes it for
others (TIOCSTI, TIOCLINUX, settings, size, line discipline, ...). A call of another
architecture's table (i386's ``int 0x80``, x32) is refused whole. Strict (the sandbox's choice
unless CUDA MPS or ``KOPT_KERNEL_SOCKETS`` needs a socket reached): no ``connect`` at all and no
unix datagram socket (a datagram is sent to a path without a connect), which closes every gap of
the socket-path cover; CUDA's own socket, a
seqpacket one listening on an abstract name, is still made (a first form that allowed stream
sockets only broke CUDA's start: H200, docs/runs/h200-syscall-filter/). Refused calls fail with
EPERM (EACCES for a socket), never kill: a library that probes them goes on. Not covered: chmod and
utime of files the process's uid owns (torch.compile's inductor uses both on its own files; as
root with its capabilities dropped, kopt.inside.capabilities, a file of another owner's is refused),
flock and POSIX locks on files outside (Triton's and inductor's caches lock; the filter cannot
tell a descriptor's file), an abstract name bound before another process binds it, and reading
what Landlock lets it read (a terminal's typed input, a FIFO's).

The sandbox applies it after Landlock, on every thread (TSYNC). On an H200, CUDA IPC and Nsight
Compute's clock worked under it (benchmarks/probes/abstract_socket_scope.py) and tests/gpu passed
whole (docs/runs/h200-syscall-filter/); the CPU tests show what it refuses
(tests/measure/test_syscall_filter.py).
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct

SECCOMP = {"x86_64": 317, "aarch64": 277}  # seccomp(2)
SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC = 1, 1
# BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_ALU|AND|K, BPF_RET|K
LD_ABS, JEQ, JGE, AND, RET = 0x20, 0x15, 0x35, 0x54, 0x06
ALLOW, ERRNO = 0x7FFF0000, 0x00050000
NR, ARCH = 0, 4  # offsets in struct seccomp_data; argument i's low word at 16 + 8 * i
AF_UNIX, SOCK_STREAM, SOCK_SEQPACKET, SOCK_TYPE_MASK = 1, 1, 5, 0xF
X32_BIT = 0x40000000
ARCHES = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}  # AUDIT_ARCH_*
# name: (x86_64's number, aarch64's); None where that table has no such call
CALLS = {
    "socket": (41, 198), "socketpair": (53, 199), "connect": (42, 203), "ioctl": (16, 29),
    # a mount of its own around the socket-path cover, a namespace, io_uring (a socket made there
    # passes no filter), a file opened by its handle under the cover (root's CAP_DAC_READ_SEARCH)
    "mount": (165, 40), "umount2": (166, 39), "pivot_root": (155, 41), "unshare": (272, 97),
    "setns": (308, 268), "io_uring_setup": (425, 425), "open_tree": (428, 428), "move_mount": (429, 429),
    "fsopen": (430, 430), "fsconfig": (431, 431), "fsmount": (432, 432), "fspick": (433, 433),
    "mount_setattr": (442, 442), "open_tree_attr": (467, 467),
    "name_to_handle_at": (303, 264), "open_by_handle_at": (304, 265),
    # System V queues, semaphores and memory: another process's, by its key (Landlock covers none)
    "msgget": (68, 186), "msgsnd": (69, 189), "msgrcv": (70, 188), "msgctl": (71, 187),
    "semget": (64, 190), "semop": (65, 193), "semtimedop": (220, 192), "semctl": (66, 191),
    "shmget": (29, 194), "shmat": (30, 196), "shmctl": (31, 195),
    # extended attributes (the results' too: Landlock covers no metadata) and root's own powers
    "setxattr": (188, 5), "lsetxattr": (189, 6), "fsetxattr": (190, 7), "setxattrat": (463, 463),
    "removexattr": (197, 14), "lremovexattr": (198, 15), "fremovexattr": (199, 16), "removexattrat": (466, 466),
    "chown": (92, None), "fchown": (93, 55), "lchown": (94, None), "fchownat": (260, 54),
    "bpf": (321, 280), "init_module": (175, 105), "finit_module": (313, 273), "delete_module": (176, 106),
    "kexec_load": (246, 104), "kexec_file_load": (320, 294), "reboot": (169, 142), "swapon": (167, 224),
    "swapoff": (168, 225), "acct": (163, 89), "settimeofday": (164, 170), "clock_settime": (227, 112),
    "clock_adjtime": (305, 266), "adjtimex": (159, 171), "iopl": (172, None), "ioperm": (173, None),
    # another process's limits and scheduling (the same uid needs no capability): allowed on itself (0)
    "prlimit64": (302, 261), "setpriority": (141, 140), "sched_setaffinity": (203, 122),
    "sched_setscheduler": (144, 119), "sched_setparam": (142, 118), "sched_setattr": (314, 274),
    # a third review (docs/runs/cpu-sandbox-review-32/): POSIX message queues (another process's
    # read, unlinked or planted: Landlock's path hooks miss mqueue), the uid's kernel keyring (read,
    # rewritten, the parent's session keyring replaced), all of the uid's inotify instances taken
    "mq_open": (240, 180), "mq_unlink": (241, 181), "mq_timedsend": (242, 182), "mq_timedreceive": (243, 183),
    "mq_notify": (244, 184), "mq_getsetattr": (245, 185), "add_key": (248, 217), "request_key": (249, 218),
    "keyctl": (250, 219), "inotify_init": (253, None), "inotify_init1": (294, 26),
    # a fourth (docs/runs/cpu-sandbox-review-33/): fanotify, the same as inotify (every group of the
    # uid taken; a file outside watched, another process's opens and writes of it read)
    "fanotify_init": (300, 262),
    # refused for some arguments only (ARGUMENT_RULES); clone3 whole, with ENOSYS: its flags are in
    # memory the filter cannot read (CLONE_INTO_CGROUP put a child in another cgroup), and glibc then
    # falls back to clone, as under Docker's default profile
    "clone": (56, 220), "clone3": (435, 435), "ptrace": (101, 117), "fcntl": (72, 25),
}  # fmt: skip
# the arguments that name whose limits or scheduling change: refused unless each is 0 (itself;
# setpriority's PRIO_PROCESS too: PRIO_USER would renice every process of the user's, the judge's)
ITSELF_ONLY = {"prlimit64": (0,), "setpriority": (0, 1), "sched_setaffinity": (0,), "sched_setscheduler": (0,)}
ITSELF_ONLY |= {"sched_setparam": (0,), "sched_setattr": (0,)}
CLONE_NAMESPACES = 0x7E020000  # CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
# (argument, how, value): refused where the argument's low word "is" the value or has "any of" its
# bits, else allowed. clone into new namespaces (unshare's way round); PTRACE_TRACEME (its
# parent's wait then saw it dead while it sat stopped); fcntl's F_SETLEASE (a lease on a file
# outside, taken through a read-only descriptor, held the judge's open for writing 23 s)
ARGUMENT_RULES = {"clone": (0, "any of", CLONE_NAMESPACES), "ptrace": (0, "is", 0), "fcntl": (1, "is", 1024)}
SPECIAL = ("socket", "socketpair", "connect", "ioctl", "clone3", *ITSELF_ONLY, *ARGUMENT_RULES)
# every other call named above, refused whole
REFUSED = [name for name in CALLS if name not in SPECIAL]
# FS_IOC_SETFLAGS (32 and 64 bit: immutable results) and FS_IOC_FSSETXATTR
IOCTLS = (0x40086602, 0x40046602, 0x401C5820)
# a terminal's (type 'T', 0x54..): TIOCSTI and TIOCLINUX (typed into it: a shell outside runs it),
# and every one that changes it for its other processes: its settings (TCSETS*, TCSETA*, TCSETX*,
# TCSETS2*), flow and queues (TCXONC, TCFLSH), exclusive use, controlling terminal, foreground
# group, window size (a SIGWINCH to its foreground), modem lines, console, serial settings, packet
# mode, line discipline (N_NULL silenced it), breaks, hang-up, a pty's signal. A terminal opened
# read-only by name passes Landlock; reading and the getters (TCGETS: isatty) stay allowed.
TERMINAL_IOCTLS = (0x5402, 0x5403, 0x5404, 0x5406, 0x5407, 0x5408, 0x540A, 0x540B, 0x540C, 0x540D, 0x540E)
TERMINAL_IOCTLS += (0x5410, 0x5412, 0x5414, 0x5416, 0x5417, 0x5418, 0x541A, 0x541C, 0x541D, 0x541F, 0x5420)
TERMINAL_IOCTLS += (0x5423, 0x5425, 0x5427, 0x5433, 0x5434, 0x5435, 0x5437, 0x402C542B, 0x402C542C, 0x402C542D)
TERMINAL_IOCTLS += (0x40045436,)


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _arg(i: int) -> int:
    return 16 + 8 * i


def _when(nr: int, block: list[bytes]) -> list[bytes]:
    """``block`` (which ends every path in a return) for call ``nr``; skipped for any other."""
    return [_op(JEQ, nr, 0, len(block)), *block]


def _socket_block(strict: bool) -> list[bytes]:
    """socket() and socketpair(): unix only; ``strict``: a stream or seqpacket one only (a datagram,
    SOCK_RAW's too, is sent to a path without a connect; CUDA's own socket is a seqpacket one)."""
    block = [_op(LD_ABS, _arg(0)), _op(JEQ, AF_UNIX, 1, 0), _op(RET, ERRNO | errno.EACCES)]
    if strict:
        block += [_op(LD_ABS, _arg(1)), _op(AND, SOCK_TYPE_MASK), _op(JEQ, SOCK_STREAM, 2, 0)]
        block += [_op(JEQ, SOCK_SEQPACKET, 1, 0), _op(RET, ERRNO | errno.EACCES)]
    return [*block, _op(RET, ALLOW)]


def _argument_rule(i: int, how: str, value: int) -> list[bytes]:
    """Refused where argument ``i``'s low word "is" ``value`` or has "any of" its bits."""
    if how == "any of":
        return [
            _op(LD_ABS, _arg(i)),
            _op(AND, value),
            _op(JEQ, 0, 0, 1),
            _op(RET, ALLOW),
            _op(RET, ERRNO | errno.EPERM),
        ]
    return [_op(LD_ABS, _arg(i)), _op(JEQ, value, 0, 1), _op(RET, ERRNO | errno.EPERM), _op(RET, ALLOW)]


def _ioctl_block() -> list[bytes]:
    """ioctl(): no inode flag set, and no terminal's command of ``TERMINAL_IOCTLS``."""
    block = [_op(LD_ABS, _arg(1))]
    for cmd in IOCTLS:
        block += [_op(JEQ, cmd, 0, 1), _op(RET, ERRNO | errno.EPERM)]
    tty = [_op(LD_ABS, _arg(1))]
    for cmd in TERMINAL_IOCTLS:
        tty += [_op(JEQ, cmd, 0, 1), _op(RET, ERRNO | errno.EPERM)]
    block += [_op(AND, 0xFF00), _op(JEQ, 0x5400, 1, 0), _op(RET, ALLOW)]  # a terminal's, or allowed
    return [*block, *tty, _op(RET, ALLOW)]


def program(machine: str, strict: bool = False) -> list[bytes]:
    """The filter for ``machine``; ``strict`` refuses every connect (a unix socket's too) and every
    unix socket a datagram is sent from."""
    col = list(ARCHES).index(machine)
    nr = {name: numbers[col] for name, numbers in CALLS.items() if numbers[col] is not None}
    prog = [_op(LD_ABS, ARCH), _op(JEQ, ARCHES[machine], 1, 0), _op(RET, ERRNO | errno.ENOSYS), _op(LD_ABS, NR)]
    if machine == "x86_64":
        prog += [_op(JGE, X32_BIT, 0, 1), _op(RET, ERRNO | errno.ENOSYS)]
    for name in [*REFUSED, *(["connect"] if strict else [])]:
        if name in nr:
            prog += [_op(JEQ, nr[name], 0, 1), _op(RET, ERRNO | errno.EPERM)]
    prog += [_op(JEQ, nr["clone3"], 0, 1), _op(RET, ERRNO | errno.ENOSYS)]
    for name, args in ITSELF_ONLY.items():
        block = [op for i in args for op in (_op(LD_ABS, _arg(i)), _op(JEQ, 0, 1, 0), _op(RET, ERRNO | errno.EPERM))]
        prog += _when(nr[name], [*block, _op(RET, ALLOW)])
    for name, rule in ARGUMENT_RULES.items():
        prog += _when(nr[name], _argument_rule(*rule))
    prog += _when(nr["socket"], _socket_block(strict))
    prog += _when(nr["socketpair"], _socket_block(strict))
    return [*prog, *_when(nr["ioctl"], _ioctl_block()), _op(RET, ALLOW)]


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def apply(strict: bool = False) -> str:
    """Install the filter on every thread of this process and the processes it starts after (needs
    no_new_privs, which the sandbox sets first); the sandbox line's part. Unlike Landlock, seccomp
    can confine the threads already running (TSYNC): a process forked from a spare has them."""
    machine = platform.machine()
    if machine not in ARCHES:
        return f"NO syscall filter (no table for {machine})"
    code = b"".join(program(machine, strict))
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _Fprog(len(code) // 8, ctypes.cast(buf, ctypes.c_void_p))
    libc = ctypes.CDLL(None, use_errno=True)
    call, mode, flags = (
        ctypes.c_long(x) for x in (SECCOMP[machine], SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC)
    )
    rc = libc.syscall(call, mode, flags, ctypes.byref(prog))
    if rc != 0:
        why = (
            f"thread {rc} could not take it" if rc > 0 else errno.errorcode.get(ctypes.get_errno(), ctypes.get_errno())
        )
        return f"NO syscall filter ({why})"
    return (
        "syscall filter on every thread: no socket but a unix one, no mount API, namespaces, System V IPC, xattrs or BPF,"
        " no other process's limits" + ("; no connect, no unix datagram" if strict else "")
    )
