"""A kernel's process forked from the judge instead of started afresh, on a machine without a GPU.

Both processes import torch: 2.5-2.7 s of CPU each on the CI machine, most of a CPU-interpreter
judge's and kernel process's own work (docs/runs/cpu-ci-durations/). The judge imports it once, as the first thing it does, and forks a spare: a process that has run
nothing but those imports and waits, on one end of a Unix socket, for the environment a
``KernelProcess`` would have started it with (``launch``); then it becomes that process
(``kopt.inside.serve.main`` on the same socket). The fork comes before the judge reads its
request, so nothing of the request, the reference or any draw is in the spare's memory: it knows
what a process started afresh would know. A spare not taken (a profiler wraps the kernel, or the
task starts none) is ended with the judge's other processes.

Only where no GPU device exists (``/dev/nvidia*``, AMD's ``/dev/kfd``, WSL's ``/dev/dxg``): on a GPU machine the kernel's
process starts as before, its start-up overlapping the judge's, and no CUDA state is ever forked.
``KOPT_FORK_KERNEL=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import runpy
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from kopt.measure import reaper, wire

_PR_SET_DUMPABLE = 4


def wanted() -> bool:
    """Whether this judge forks its kernel's process: no GPU device file on the machine, not turned off."""
    if os.environ.get("KOPT_FORK_KERNEL", "1") == "0" or not sys.platform.startswith("linux"):
        return False  # (prctl, /proc and the GPU device files below are Linux's)
    return not gpu_device_files()


def gpu_device_files() -> bool:
    """Whether a GPU device file exists (NVIDIA's, AMD's ``/dev/kfd``, WSL's ``/dev/dxg``): known
    without importing torch or starting CUDA."""
    return bool(glob.glob("/dev/nvidia*") or os.path.exists("/dev/kfd") or os.path.exists("/dev/dxg"))


class Forked:
    """A forked kernel's process, as much of ``subprocess.Popen`` as ``KernelProcess`` uses."""

    def __init__(self, pid: int):
        self.pid, self.returncode, self.args = pid, None, ["kopt.inside (forked)"]

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # collected elsewhere: as Popen, an exit of 0
                self.returncode = 0
                return 0
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() >= deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.002)
        return self.returncode

    def kill(self) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)


class Spare:
    """The judge's end of a spare: ``launch`` makes it the kernel's process, ``discard`` ends it."""

    def __init__(self, pid: int, sock: socket.socket):
        self.pid, self.sock = pid, sock

    def launch(self, env: dict[str, str]) -> tuple[Forked, socket.socket]:
        """The spare, told ``env``, now the kernel's process; its handle and the judge's channel."""
        wire.send_pickle(self.sock, {"env": env})
        return Forked(self.pid), self.sock

    def discard(self) -> None:
        self.sock.close()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(self.pid, 0)


def fork() -> Spare:
    """torch imported, then the spare forked (it never returns here). Not Triton: its own
    ``@triton.jit`` functions are made at import as the environment says (interpreted or not),
    and the kernel's environment is only set at ``launch``."""
    import torch  # noqa: F401 - imported once for both processes

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        ours.close()
        _become_kernel(theirs)
    theirs.close()
    return Spare(pid, ours)


def _become_kernel(sock: socket.socket) -> None:
    """In the spare: what ``subprocess.Popen(start_new_session=True, stdin=DEVNULL, pass_fds=[fd],
    env=env)`` and a fresh interpreter would give, then the kernel's process on ``sock``."""
    code = 1
    try:
        os.setsid()
        reaper.die_with_parent()
        try:
            env = wire.recv_pickle(sock)["env"]  # the judge's first message (kopt.measure.wire)
        except wire.ChannelClosed:  # the judge did not need it
            os._exit(0)
        fd = sock.detach()
        as_started_afresh(env, keep=fd)
        sys.argv = [str(Path(__file__).resolve().parents[1] / "inside" / "__main__.py"), str(fd)]
        # what `python -m kopt.inside FD` runs, by name as on that command line: the judge's modules
        # never import the kernel's side (tests/test_layers.py); it ends the process
        runpy.run_module("kopt.inside", run_name="__main__", alter_sys=True)
    except BaseException:  # noqa: BLE001 - the spare never returns into the judge's code
        with contextlib.suppress(Exception):
            import traceback

            traceback.print_exc()
    os._exit(code)


def as_started_afresh(env: dict[str, str], keep: int | None = None, output: int | None = None) -> None:
    """In a forked process that made a session of its own (``os.setsid``): what
    ``Popen(start_new_session=True, stdin=DEVNULL, env=env)`` and an exec would give besides
    (dumpable, default signal handlers, ``env`` as its whole environment, no descriptor but 0-2 and
    ``keep``), its output and errors to ``output`` if given."""
    with contextlib.suppress(OSError, AttributeError):  # as after an exec (a judge keeps itself undumpable)
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_DUMPABLE, 1)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL if sig != signal.SIGPIPE else signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.clear()
    os.environ.update(env)
    tempfile.tempdir = None  # TMPDIR is the new environment's
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    for std in (1, 2) if output is not None else ():
        os.dup2(output, std)
    top = os.sysconf("SC_OPEN_MAX")
    os.closerange(3, keep if keep is not None else top)
    if keep is not None:
        os.closerange(keep + 1, top)
    if env.get("PYTHONUNBUFFERED"):
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(AttributeError, ValueError):
                stream.reconfigure(line_buffering=True, write_through=True)
