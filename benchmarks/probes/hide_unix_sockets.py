"""Probe (the threat model's "Not covered": a daemon reached over a unix socket with a path).

Landlock's file rules cover no ``connect``: a kernel reaches any listening unix socket with a path
(a user's tmux server, ``systemd --user``), and a review's kernel had a tmux server rewrite
``bench.csv`` after the verdict. Can the kernel's process hide them from itself before its sandbox,
as kopt.inside.confined would: a mount namespace of its own (``unshare(CLONE_NEWNS)``, mounts made
private), ``/dev/null`` bound over every socket path ``/proc/net/unix`` lists, then kopt's sandbox
(Landlock forbids a sandboxed process mount and umount)? Here a listener stands for the daemon;
the child reports whether it could connect, whether it could undo the hiding, how many paths it
hid and how long that took, and the listener's side is checked from the parent. Needs root or
unprivileged user namespaces; on the CPU it says which.

    .venv/bin/python benchmarks/probes/hide_unix_sockets.py
"""

import ctypes
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

from kopt.inside import sandbox

CLONE_NEWNS, MS_BIND, MS_REC, MS_PRIVATE = 0x00020000, 4096, 16384, 1 << 18
libc = ctypes.CDLL(None, use_errno=True)


def _errno(call: str, rc: int) -> str:
    return "ok" if rc == 0 else f"{call} failed: {os.strerror(ctypes.get_errno())}"


def socket_paths() -> list[str]:
    """Every unix socket with a path bound on this machine (its network namespace)."""
    lines = Path("/proc/net/unix").read_text().splitlines()[1:]
    return sorted({f[7] for f in (ln.split() for ln in lines) if len(f) > 7 and f[7].startswith("/")})


def hide(paths: list[str]) -> tuple[int, str]:
    """A mount namespace of this process's own, /dev/null bound over each path: (hidden, note)."""
    if libc.unshare(CLONE_NEWNS) != 0:
        return 0, _errno("unshare(CLONE_NEWNS)", -1)
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return 0, _errno("mount --make-rprivate /", -1)
    hidden = sum(libc.mount(b"/dev/null", p.encode(), None, MS_BIND, None) == 0 for p in paths if os.path.exists(p))
    return hidden, "ok"


def child(target: str, scratch: str, hiding: bool) -> None:
    start = time.perf_counter()
    paths = socket_paths()
    hidden, note = hide(paths) if hiding else (0, "not hidden: the control")
    took = (time.perf_counter() - start) * 1000
    line = sandbox.apply(scratch)
    print(f"{len(paths)} socket paths, {hidden} hidden in {took:.1f} ms ({note}); sandbox: {line[:60]}")
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(target)
            s.sendall(b"reached")
        print("connect: reached the listener")
    except OSError as e:
        print(f"connect: refused ({type(e).__name__}: {e.strerror})")
    print("umount:", _errno("umount", libc.umount2(target.encode(), 0)))
    print("mount:", _errno("mount --bind", libc.mount(b"/", target.encode(), None, MS_BIND, None)))


def main() -> None:
    for hiding in (False, True):
        print(f"== {'hidden' if hiding else 'the control'}")
        one(hiding)


def one(hiding: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        target = os.path.join(folder, "daemon.sock")
        with socket.socket(socket.AF_UNIX) as listener:
            listener.bind(target)
            listener.listen()
            listener.settimeout(0.5)
            pid = os.fork()
            if pid == 0:
                try:
                    child(target, os.path.join(folder, "scratch"), hiding)
                finally:
                    sys.stdout.flush()
                    os._exit(0)
            os.waitpid(pid, 0)
            try:
                conn, _ = listener.accept()
                print("listener:", conn.recv(16) or b"(connected, nothing sent)")
            except OSError:
                print("listener: nothing connected")
            print("outside the child: the socket path still works:", _still_works(target, listener))


def _still_works(target: str, listener: socket.socket) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(target)
    listener.accept()[0].close()
    return True


if __name__ == "__main__":
    main()
