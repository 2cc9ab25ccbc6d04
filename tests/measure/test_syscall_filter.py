"""kopt.inside.syscall_filter refuses the ways a review reached a listener outside the sandbox
(CPU, c47363d): TCP Fast Open's sendto, MPTCP, UDP, ``open_tree`` around the socket-path cover;
and, strict, every connect and unix datagram socket. Each way is first shown to reach the
listener without the filter, so the test can fail."""

import os
import platform
import socket
import subprocess
import sys

import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "aarch64"), reason="no syscall table here")

ATTEMPTS = r"""
import ctypes, socket, sys
from kopt.inside import syscall_filter
libc = ctypes.CDLL(None, use_errno=True)
port, path, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if mode != "off":
    assert libc.prctl(38, 1, 0, 0, 0) == 0  # no_new_privs, as the sandbox sets it
    print(syscall_filter.apply(deny_connect=mode == "strict", stream_only=mode == "strict"), flush=True)

def attempt(name, send):
    try:
        send()
        print(name, "reached")
    except OSError as e:
        print(name, "refused")

def fast_open():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.sendto(b"x", socket.MSG_FASTOPEN, ("127.0.0.1", port))

def mptcp():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262) as s:
        s.connect(("127.0.0.1", port))

def udp():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.sendto(b"x", ("127.0.0.1", port))

def open_tree():
    if libc.syscall(428, -100, b"/", 1) < 0:  # open_tree(AT_FDCWD, "/", OPEN_TREE_CLONE)
        raise OSError(ctypes.get_errno(), "open_tree")

def unix_connect():
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)

def unix_datagram():
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
        s.sendto(b"x", path + ".dgram")

for name, send in [("fast open", fast_open), ("mptcp", mptcp), ("udp", udp), ("open_tree", open_tree),
                   ("unix connect", unix_connect), ("unix datagram", unix_datagram)]:
    attempt(name, send)
"""


def _run(mode: str, port: int, path: str) -> list[str]:
    got = subprocess.run(
        [sys.executable, "-c", ATTEMPTS, str(port), path, mode], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert got.returncode == 0, got.stderr
    return got.stdout.splitlines()


def test_the_filter_refuses_what_landlock_let_through(tmp_path):
    path = str(tmp_path / "daemon.sock")
    with (
        socket.socket(socket.AF_INET) as tcp,
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp,
        socket.socket(socket.AF_UNIX) as unix,
        socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as datagram,
    ):
        tcp.bind(("127.0.0.1", 0))
        port = tcp.getsockname()[1]
        udp.bind(("127.0.0.1", port))
        unix.bind(path)
        datagram.bind(path + ".dgram")
        tcp.listen(8), unix.listen(8)
        off, normal, strict = (_run(mode, port, path) for mode in ("off", "normal", "strict"))
    ways = ["fast open", "mptcp", "udp", "open_tree", "unix connect", "unix datagram"]
    reached_without = {w for w in ways if f"{w} reached" in off}
    # MPTCP and TCP Fast Open's client side hang on sysctls (net.mptcp.enabled, net.ipv4.tcp_fastopen); open_tree on root
    assert {"udp", "unix connect", "unix datagram", *(["open_tree"] if os.geteuid() == 0 else [])} <= reached_without, (
        off
    )
    assert normal[0] == "no socket but a unix one, no mount API, unshare or setns"
    assert [f"{w} refused" for w in ways[:4]] == normal[1:5], normal
    assert normal[5:] == ["unix connect reached", "unix datagram reached"], normal
    assert strict[0].endswith("; no connect") and strict[1:] == [f"{w} refused" for w in ways], strict
