"""Unix sockets with a path, hidden from the kernel's process before its sandbox (kopt.inside.sandbox).

Landlock's file rules cover no ``connect``: a kernel reaches any listening unix socket with a path,
and a daemon there runs what it is asked outside the sandbox and outside the judge's process tree
(a review's kernel had a user's tmux server rewrite ``bench.csv`` after the verdict). So the
kernel's process takes a mount namespace of its own (its mounts private: nothing it binds is seen
outside) and binds ``/dev/null`` over every socket path ``/proc/net/unix`` lists: a connect there
is refused. Landlock, applied next, forbids it any mount or umount, so the cover stays.

Not covered (a review reached each, docs/threat_model.md "Not covered"): a socket bound after this
(the process's namespace is a snapshot), one listed by a relative or stale name, another name of
it (a hard link, a folder mounted twice), one of another network namespace, a socket this process
was handed; as root, a mount of the process's own made with ``open_tree`` or ``fsmount``, which
the cover is not on and Landlock does not check. kopt.inside.syscall_filter, applied after, closes
all of those but a handed socket (strict: no connect, no unix datagram, no mount API).
Needs CAP_SYS_ADMIN (root, as on the GPU machines and in CI): without it nothing is hidden and the
line says so (an unprivileged user namespace would do, and is not tried: CUDA and Nsight Compute
under one have not been run). Left reachable: CUDA MPS's sockets (``CUDA_MPS_PIPE_DIRECTORY``,
default /tmp/nvidia-mps: CUDA's client connects there) and the folders in ``KOPT_KERNEL_SOCKETS``
(the user's choice). It costs about 30 us a path (this CPU machine: 4-5 ms with 10 listed, 34 ms
with 1000, 140-156 ms with 5000), paid at each kernel's process start.
On an H200, CUDA IPC and Nsight Compute's clock worked with the namespace taken and, under
Nsight Compute, no socket path to hide (docs/runs/h200-gpu-tests-6db5db5/).
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

CLONE_NEWNS, MS_BIND, MS_REC, MS_PRIVATE = 0x00020000, 4096, 16384, 1 << 18
UNIX_TABLE = "/proc/net/unix"


def listed() -> list[str]:
    """Every unix socket path bound in this network namespace (``/proc/net/unix``'s last column;
    abstract ones start with ``@`` and are Landlock's scope's)."""
    try:
        lines = Path(UNIX_TABLE).read_text().splitlines()[1:]
    except OSError:
        return []
    fields = (ln.split(maxsplit=7) for ln in lines)
    return sorted({f[7] for f in fields if len(f) == 8 and f[7].startswith("/")})


def left_reachable() -> list[str]:
    """Folders whose sockets stay: CUDA MPS's and the user's (``KOPT_KERNEL_SOCKETS``)."""
    mps = os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps")
    user = [x for x in os.environ.get("KOPT_KERNEL_SOCKETS", "").split(os.pathsep) if x]
    return [os.path.realpath(x) for x in (mps, *user)]


def mps_in_use() -> bool:
    """Whether a CUDA MPS server listens here (its control socket in its pipe folder)."""
    return os.path.exists(os.path.join(left_reachable()[0], "control"))


def under(path: str, folders: list[str]) -> bool:
    """Whether ``path`` is one of ``folders`` or beneath one (the sandbox's check of handed files too)."""
    return any(path == f or path.startswith(f.rstrip("/") + "/") for f in folders)


def hide() -> str:
    """Take a private mount namespace and cover every listed socket path; the sandbox line's part."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        return f"unix sockets with a path NOT hidden (a mount namespace: {os.strerror(ctypes.get_errno())})"
    # private before any bind: a bind over a shared mount would reach the user's own namespace
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return f"unix sockets with a path NOT hidden (mounts made private: {os.strerror(ctypes.get_errno())})"
    keep = left_reachable()
    hidden, failed = 0, []
    for path in listed():
        real = os.path.realpath(path)
        if under(real, keep) or not os.path.exists(real):
            continue
        if libc.mount(b"/dev/null", real.encode(), None, MS_BIND, None) == 0:
            hidden += 1
        else:
            failed.append(f"{path} ({os.strerror(ctypes.get_errno())})")
    line = f"{hidden} unix socket path(s) hidden"
    return line + (f", NOT {', '.join(failed)}" if failed else "")
