"""The one channel across the trust boundary: a Unix socket between the judge (trusted) and the
kernel's process (kopt.inside).

A message is a 4-byte length and a body. The judge sends pickles (it is trusted: the kernel's
process may unpickle what the judge sends); the kernel's process answers in JSON only, which the
judge reads as data (``Reply``), never unpickles. File descriptors (the CPU's shared memory) travel
beside a message (SCM_RIGHTS). Nothing the kernel's process sends is taken as a verdict: its times
are labelled as its own report, its faults can only fail it.
"""

from __future__ import annotations

import json
import math
import pickle
import select
import socket
import struct
import time

_LEN = struct.Struct("!I")
MAX_REPLY = 64 << 20  # a reply larger than this is refused (a kernel could try to exhaust the judge)


class ChannelClosed(EOFError):
    """The other side closed the socket (the kernel's process ended)."""


class ChannelTimeout(TimeoutError):
    """No whole message within the time limit."""


def send_pickle(sock: socket.socket, obj, fds: list[int] | None = None) -> None:
    _send(sock, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL), fds)


def send_json(sock: socket.socket, obj) -> None:
    _send(sock, json.dumps(obj, allow_nan=True).encode())


def _send(sock: socket.socket, body: bytes, fds: list[int] | None = None) -> None:
    head = _LEN.pack(len(body))
    if fds:
        socket.send_fds(sock, [head], fds)
        sock.sendall(body)
    else:
        sock.sendall(head + body)


def _recv_exact(
    sock: socket.socket, n: int, deadline: float | None, fds: list[int] | None = None, spin: bool = False
) -> bytes:
    """``n`` bytes; ``spin``: poll the socket without sleeping until they come (no wake-up from
    the scheduler's sleep: the bound's batches, kopt.measure.bound, wait so on both sides)."""
    buf = bytearray()
    while len(buf) < n:
        if spin:
            _spin_until_readable(sock, deadline)
        elif deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([sock], [], [], left)[0]:
                raise ChannelTimeout("no answer in time")
        if fds is not None and not buf:
            chunk, got, _, _ = socket.recv_fds(sock, n, 4)
            fds.extend(got)
        else:
            chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ChannelClosed("the other side closed the channel")
        buf += chunk
    return bytes(buf)


def _spin_until_readable(sock: socket.socket, deadline: float | None) -> None:
    while not select.select([sock], [], [], 0)[0]:
        if deadline is not None and time.monotonic() > deadline:
            raise ChannelTimeout("no answer in time")


def recv_body(
    sock: socket.socket, timeout_s: float | None = None, fds: list[int] | None = None, spin: bool = False
) -> bytes:
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    (n,) = _LEN.unpack(_recv_exact(sock, _LEN.size, deadline, fds, spin))
    if n > MAX_REPLY:
        raise ValueError(f"a message of {n} bytes is larger than the channel allows")
    return _recv_exact(sock, n, deadline, spin=spin)


def recv_pickle(sock: socket.socket, fds: list[int] | None = None, spin: bool = False):
    """The kernel's side: the judge's next order (``spin``: polled for, not slept on)."""
    return pickle.loads(recv_body(sock, None, fds, spin))


def recv_reply(sock: socket.socket, timeout_s: float, spin: bool = False) -> dict:
    """The judge's side: the kernel process's answer as plain data (a JSON object), never code."""
    try:
        msg = json.loads(recv_body(sock, timeout_s, spin=spin))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"the kernel's process sent an unreadable answer ({e})") from None
    if not isinstance(msg, dict):
        raise ValueError("the kernel's process sent an answer that is not an object")
    return msg


def _finite(v, key: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ValueError(f"the kernel's process answered {key}={v!r}, not a finite number")
    return float(v)


def number(msg: dict, key: str) -> float:
    """A finite number from an answer of the kernel's process, or ValueError."""
    return _finite(msg.get(key), key)


def numbers(msg: dict, key: str) -> list[float]:
    v = msg.get(key)
    if not isinstance(v, list):
        raise ValueError(f"the kernel's process answered {key}={v!r}, not a list")
    return [_finite(x, key) for x in v]
