"""Landlock around the kernel's process (Linux 5.13+), applied before the kernel is imported.

Once applied it cannot be undone, and every process the kernel starts inherits it:
* no file may be written, made, removed or renamed outside the scratch folder the judge gave, its
  own compilers' caches (one folder per version: kopt.measure.boundary.kernel_cache), the GPU's
  device files, /dev/shm and its own /proc entry: the results, the
  workspace, ref.py and the kernels stay as they are, whatever the kernel runs (and, as root, no
  raw disk device is writable either: no device node may be made, not even in the scratch);
* where a profiler wraps the process, its process tracker's pipes may be written too (``PIPES``);
* no file stays open for writing outside those places (``close_handed_files``): Landlock checks a
  path when it is opened, never a descriptor the process was handed, and Nsight Compute's front
  end hands its target the record it writes, the clock that decides, and the judge its log as
  standard output and error (moved to a file in the scratch, which the judge copies to its log);
* Landlock confines the thread that applies it and the threads it starts after, never a thread
  already running (a kernel runs its code on one through a signal handler: a review rewrote a
  clock's record so). A kernel's process is confined before its Python starts
  (kopt.inside.confined, then exec: every thread it will have is born confined); one forked from
  a spare is confined at its first order, while one thread runs, and the line says if more ran.
* no process outside the sandbox may be traced (ptrace, /proc/PID/mem): the judge cannot be read
  or written;
* from ABI 4 on, no TCP port may be bound or connected to (a daemon that runs what it is asked, on
  this machine or another; CUDA IPC and Nsight Compute's clock need none, H200:
  benchmarks/probes/abstract_socket_scope.py);
* after it, a seccomp filter on every thread (kopt.inside.syscall_filter: the ways out Landlock
  does not check, which reviews took: UDP, MPTCP, TCP Fast Open, the mount API, file handles,
  System V IPC, xattrs, another process's limits, TIOCSTI, BPF; strict, no connect and no unix
  datagram), and, as root, every capability dropped (kopt.inside.capabilities: root's other powers);
* from ABI 6 on, no signal may be sent to a process outside it (the judge cannot be killed), and no
  abstract unix socket made outside it may be connected to (a process that hands out descriptors
  over one would give the kernel a writable file);
* before it, every unix socket with a path is covered in a mount namespace of the process's own
  (kopt.inside.socket_paths: Landlock's file rules cover no connect), which Landlock then keeps it
  from undoing (no mount, no umount).

Where the kernel has no Landlock (older kernels, another OS, a container that blocks it), the
reason is reported and the judge records it: the verdict still rests on the judge's own memory,
and the judge kills every process of the kernel's before it writes (kopt.measure.reaper).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import stat
import struct
from pathlib import Path

from kopt.inside import capabilities, socket_paths, syscall_filter

CREATE_RULESET, ADD_RULE, RESTRICT_SELF = 444, 445, 446  # the same on every architecture
PR_SET_NO_NEW_PRIVS = 38
RULE_PATH_BENEATH = 1
WRITE_FILE, REMOVE_DIR, REMOVE_FILE = 1 << 1, 1 << 4, 1 << 5
MAKE = sum(1 << b for b in range(6, 13))  # char, dir, reg, sock, fifo, block, sym
MAKE_FIFO = 1 << 10
# handled, never granted: a device node made in the scratch would open the disk under it to a root
# kernel (a review wrote a loop device's backing file through one)
DEVICE_NODES = 1 << 6 | 1 << 11
REFER, TRUNCATE = 1 << 13, 1 << 14
# all a profiler's process tracker's folder grants (``profiler_pipes``): its pipes written, made or
# removed; no link, file, folder or device made there, nothing moved in or out, for its trusted
# front end to open or remove by name
PIPES = WRITE_FILE | TRUNCATE | MAKE_FIFO | REMOVE_FILE
# ABI 6 scopes: no connect to an abstract unix socket made outside the sandbox (the judge's CUDA makes
# one, ``@cuda-uvmfd-<ns>-<pid>@``; CUDA IPC and Nsight Compute's injection work with it scoped, H200:
# benchmarks/probes/abstract_socket_scope.py), no signal to a process outside it
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1 << 0, 1 << 1
# ABI 4: handled, never granted (LANDLOCK_ACCESS_NET_BIND_TCP, LANDLOCK_ACCESS_NET_CONNECT_TCP)
NET_TCP = 1 << 0 | 1 << 1
_L = ctypes.c_long  # syscall() is variadic: pass every number as a long


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def abi() -> int:
    """Landlock's ABI version here, 0 when there is none."""
    try:
        v = _libc().syscall(_L(CREATE_RULESET), None, _L(0), _L(1))  # LANDLOCK_CREATE_RULESET_VERSION
    except (OSError, AttributeError):
        return 0
    return max(int(v), 0)


# device files a GPU kernel must open for writing (NVIDIA, AMD), and the rest a process needs
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/shm", "/dev/kfd", "/dev/dri", "/dev/nvidia-caps")


def writable() -> list[str]:
    """Where a kernel may write besides its scratch folder: the GPU's device files, shared memory,
    its own /proc entry, and its own compilers' caches (``KOPT_KERNEL_CACHE``: one folder per
    version, set by the judge; never the user's ~/.cache, where Snakemake keeps the scripts its
    trusted jobs run). Not the rest of /dev (as root, a disk's raw device would bypass every file
    rule) nor of /proc."""
    devices = [*DEVICES, *(str(d) for d in sorted(Path("/dev").glob("nvidia*")))]
    own = [os.environ["KOPT_KERNEL_CACHE"]] if os.environ.get("KOPT_KERNEL_CACHE") else []
    extra = [x for x in os.environ.get("KOPT_KERNEL_WRITABLE", "").split(os.pathsep) if x]  # the user's choice
    return [*devices, f"/proc/{os.getpid()}", *own, *extra]


def profiler_pipes(profiler_tmp: str | None) -> list[str]:
    """The process tracker's folders of the profiler that wraps this process (Nsight Compute's
    front end keeps their pipes in its own TMPDIR, ``profiler_tmp``, a folder of the judge's):
    every program this process starts reports itself there, and dies of SIGSEGV where it cannot
    write them (H200: docs/runs/h200-ncu-tmpdir/). Nothing else of the front end's."""
    return [str(d) for d in sorted(Path(profiler_tmp).glob("NVIDIA-treetracker-*"))] if profiler_tmp else []


def confine(scratch: str, profiler_tmp: str | None) -> str:
    """``apply`` with the pipes of the profiler that wraps this process (``profiler_tmp``: its front
    end's TMPDIR, or None); the line the judge records."""
    also = profiler_pipes(profiler_tmp)
    line = apply(scratch, also)
    if profiler_tmp and not also:  # the judge records the line: a child's SIGSEGV explained
        line += "; no process tracker of the profiler's found: a program this process starts may die under it"
    return line


def apply(scratch: str, also: list[str] | tuple = ()) -> str:
    """Restrict this process and its future children (``also``: more folders it may write); a line
    saying what holds (or why nothing does)."""
    version = abi()
    if version < 1:
        return "none: this kernel has no Landlock (Linux 5.13+ with landlock enabled)"
    handled = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE
    handled |= REFER if version >= 2 else 0
    handled |= TRUNCATE if version >= 3 else 0
    net = NET_TCP if version >= 4 else 0
    scoped = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL if version >= 6 else 0
    attr = struct.pack("QQQ", handled, net, scoped)[: 24 if version >= 6 else 16 if version >= 4 else 8]
    libc = _libc()
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = libc.syscall(_L(CREATE_RULESET), buf, _L(len(attr)), _L(0))
    if fd < 0:
        return f"none: landlock_create_ruleset failed (errno {ctypes.get_errno()})"
    sockets = socket_paths.hide()  # before Landlock, which forbids every mount after
    try:
        folders = [scratch, *writable()]
        closed = close_handed_files(folders)
        for path in folders:
            _allow(libc, fd, path, handled & ~DEVICE_NODES)
        for path in also:
            _allow(libc, fd, path, handled & PIPES)
        if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or libc.syscall(_L(RESTRICT_SELF), _L(fd), _L(0)) != 0:
            return f"none: landlock_restrict_self failed (errno {ctypes.get_errno()})"
    finally:
        os.close(fd)
    # strict (no connect at all) unless a socket must stay reachable: CUDA MPS's client connects to its server
    strict = not socket_paths.mps_in_use() and not os.environ.get("KOPT_KERNEL_SOCKETS")
    sockets += f"; {syscall_filter.apply(strict)}; {capabilities.drop()}"
    signals = "; signals to and abstract unix sockets of processes outside it refused" if scoped else ""
    tcp = "; TCP bind and connect refused" if net else ""
    pipes = f", the pipes of the profiler's process tracker ({len(also)} folder)" if also else ""
    handed = f"; closed, handed open for writing: {', '.join(closed)}" if closed else ""
    return f"landlock ABI {version}: writes only under the scratch folder, its own caches, the GPU's device files and /proc/self{pipes}{signals}{tcp}; {sockets}{handed}"


def loose_threads() -> str:
    """For the line of a process confined as it runs (not through an exec): the threads that were
    running when it was, which Landlock left as they were."""
    others = len(os.listdir("/proc/self/task")) - 1
    return f"; NOT the {others} thread(s) already running (Landlock confines none)" if others else ""


def close_handed_files(folders: list[str]) -> list[str]:
    """Close every file this process holds open for writing outside ``folders`` (/dev/null in its
    place: a library still writing to that number writes nowhere), its standard output and error
    moved to the file ``KOPT_KERNEL_OUTPUT`` names (the judge's choice, in the scratch, which the
    judge copies to its own log: kopt.measure.boundary; a pipe or a terminal too where it is set);
    the paths closed. Nsight Compute's front end hands the process it starts the record it fills
    (``--log-file``) open for writing (H200: docs/runs/h200-gpu-tests-af7306c/), and the judge its
    log as standard output and error: Landlock checks paths when they are opened, so those
    descriptors would let the kernel rewrite the clock that decides it, or the judge's log (a
    review truncated it and wrote "v1 kept" there). A file unlinked or a memfd counts too: another
    may read it through a descriptor."""
    inside = [os.path.realpath(f) for f in folders]
    closed, relay = [], os.environ.get("KOPT_KERNEL_OUTPUT")
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            mode, flags, path = os.fstat(fd).st_mode, fcntl.fcntl(fd, fcntl.F_GETFL), os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the listing's own descriptor, closed by now
            continue
        output = fd in (1, 2)
        if flags & os.O_ACCMODE == os.O_RDONLY or socket_paths.under(path, inside) or path == os.devnull:
            continue
        if not stat.S_ISREG(mode) and not (output and relay):  # a pipe or a terminal: where the judge relays
            continue
        place = (relay or os.devnull) if output else os.devnull
        target = os.open(place, os.O_WRONLY | os.O_APPEND | (os.O_CREAT | os.O_NOFOLLOW if output else 0), 0o600)
        os.dup2(target, fd)
        os.close(target)
        closed.append(f"{path} (now {place})" if output else path)
    return list(dict.fromkeys(closed))  # standard output and error: often one file


def _allow(libc, ruleset: int, path: str, access: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return
    if not os.path.isdir(path):  # a device file: only what applies to files
        access &= WRITE_FILE | TRUNCATE
    try:
        rule = ctypes.create_string_buffer(struct.pack("=Qi", access, fd), 12)
        libc.syscall(_L(ADD_RULE), _L(ruleset), _L(RULE_PATH_BENEATH), rule, _L(0))
    finally:
        os.close(fd)
