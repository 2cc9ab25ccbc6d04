"""A judge's process forked from a warm one instead of started afresh, on a machine without a GPU.

A judge (``python -m kopt.measure.child``) first imports torch: 1.8-2.7 s of CPU on the CI
machine, most of what a CPU-interpreter judge costs. A rule's job starts one judge, but a test
run's workers start 135 of the run's 195 (docs/runs/cpu-ci-durations/). A process asking for its
second judge starts a zygote, ``python -m kopt.measure.zygote``: a fresh interpreter that imports
what a judge has imported when it forks its kernel's spare (kopt.measure.spare: the judge's
module and torch) and nothing else, runs nothing, and forks each judge asked for from then on.
It forks twice: the middle process ends at once, so the judge is re-parented to the process that
asked, a child subreaper (kopt.measure.reaper), which waits for it, kills its group and sweeps
what it leaves as for a judge it started itself. The judge then becomes what ``Popen([python,
-m, kopt.measure.child, ...], start_new_session=True, cwd=..., env=...)`` makes: a session of
its own, the asker's environment, folder, log and command line, killed when the asker dies.

Trusted, like the judge: the zygote never sees a request's contents (only its paths), no
kernel's code runs in it or before the fork, and like the judge it is undumpable (no process of
the user's, a kernel's among them, may trace it or write its memory, which each judge inherits). Only where ``spare.wanted()`` (no GPU device on the
machine): no CUDA state is ever forked. A zygote started under other environment variables than
the asker has now (but kopt's own, ``AFTER_START``) is replaced: what torch, libgomp or Python
read as they load stays as the zygote found it; where it cannot serve (a profiler wraps the
judge, no subreaper, a thread other than the main one asks), the judge starts afresh as before.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import socket
import subprocess
import sys
import threading
import time

from kopt.measure import child, reaper, spare, wire

# variables a judge reads after it starts, never at import (kopt reads its own KOPT_* where it uses
# them, none at a module's import): a zygote started under other values serves
AFTER_START = ("KOPT_", "PYTEST_CURRENT_TEST", "PYTHONUNBUFFERED")
STARTUP_S = 300.0


def _import_env(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if not k.startswith(AFTER_START)}


class Zygote:
    """The asker's end: ``start`` forks a judge, a ``spare.Forked`` handle (the asker is its parent)."""

    lock = threading.Lock()
    current: Zygote | None = None
    asked: dict[int, int] = {}  # judges asked for, by the asking process

    def __init__(self):
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.env, self.owner = _import_env(dict(os.environ)), os.getpid()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "kopt.measure.zygote", str(theirs.fileno())],
            pass_fds=[theirs.fileno()],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,
            preexec_fn=reaper.die_with_parent,
        )
        theirs.close()
        self.sock = ours

    def serves(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None and self.env == _import_env(dict(os.environ))

    def start(self, argv: list[str], env: dict[str, str], log_fd: int) -> spare.Forked:
        """The judge forked, re-parented to this process, then told to go; a judge whose asker
        gave up (the zygote hung, died) never runs its task: its go never comes."""
        wait, go = os.pipe()
        try:
            try:
                req = {"argv": argv, "env": env, "cwd": os.getcwd(), "asker": os.getpid()}
                wire.send_pickle(self.sock, req, [log_fd, wait])
            finally:
                os.close(wait)
            # the first answer waits for the zygote's imports; past the judge's own start-up limit
            # (kopt.measure.runner) it is taken for hung
            judge = spare.Forked(pickle.loads(wire.recv_body(self.sock, STARTUP_S))["pid"])
            os.write(go, b"1")
            return judge
        finally:
            os.close(go)

    def close(self) -> None:
        self.sock.close()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def wanted(wrapper: list[str] | None) -> bool:
    """Whether this judge is forked: no GPU on the machine, no profiler wrapping the judge, asked
    from the main thread (a zygote dies with the thread that started it) of a process that can
    take the judge as its child (a subreaper) and has started a judge before (a zygote costs what
    one judge's start-up does: it pays from the second on; a rule's job starts one)."""
    if not (spare.wanted() and not wrapper and threading.current_thread() is threading.main_thread()):
        return False
    asked = Zygote.asked[os.getpid()] = Zygote.asked.get(os.getpid(), 0) + 1
    return asked > 1 and reaper.become_subreaper()


def start_judge(argv: list[str], env: dict[str, str], log_fd: int) -> spare.Forked | None:
    """The judge ``python -m kopt.measure.child *argv`` under ``env``, its output to ``log_fd``,
    forked by this process's zygote (started or replaced as needed); None where it cannot."""
    with Zygote.lock:
        z = Zygote.current
        if z is not None and not z.serves():
            _drop(z)
            z = None
        try:
            Zygote.current = z = z or Zygote()
            return z.start(argv, env, log_fd)
        except (OSError, EOFError, ValueError, KeyError):  # it died, hung or never started: afresh instead
            _drop(z)
            return None


def _drop(z: Zygote | None) -> None:
    if z is not None and z.owner == os.getpid():
        z.close()
    Zygote.current = None


def pids() -> frozenset[int]:
    """The zygote's process (a sweep keeps it)."""
    z = Zygote.current
    return frozenset({z.proc.pid}) if z is not None and z.owner == os.getpid() else frozenset()


def _serve(sock: socket.socket) -> None:
    """In the zygote: one judge per request until the asker closes the socket."""
    while True:
        fds: list[int] = []
        try:
            req = wire.recv_pickle(sock, fds)
        except wire.ChannelClosed:
            os._exit(0)
        told, tell = os.pipe()
        middle = os.fork()
        if middle == 0:
            os.close(told)
            _fork_judge(req, fds, sock, tell)
        os.close(tell)
        pid = int(os.read(told, 32) or b"0")
        os.close(told)
        os.waitpid(middle, 0)  # ended: the judge is the asker's child before the asker learns its pid
        wire.send_pickle(sock, {"pid": pid})
        for fd in fds:
            os.close(fd)


def _fork_judge(req: dict, fds: list[int], sock: socket.socket, tell: int) -> None:
    """In the middle process: fork the judge, tell the zygote its pid once it has a session of its
    own (the group the asker kills), end."""
    ready, started = os.pipe()
    judge = os.fork()
    if judge == 0:
        os.setsid()
        middle = os.getppid()  # before this process says it started: the middle waits for that
        os.write(started, b"1")
        for fd in (sock.detach(), tell, ready, started):
            os.close(fd)
        _become_judge(req, middle, *fds)
    os.read(ready, 1)
    os.write(tell, str(judge).encode())
    os._exit(0)


def _become_judge(req: dict, middle: int, log_fd: int, go_fd: int) -> None:
    """In the forked judge, once the asker (its parent now) says go: the asker's environment,
    folder, log and a judge's command line, then the judge's main."""
    code = 1
    try:
        while os.getppid() == middle:  # until the middle process has ended
            time.sleep(0.0005)
        reaper.die_with_parent()
        if os.getppid() != req["asker"] or os.read(go_fd, 1) != b"1":  # the asker is gone or gave up
            os._exit(1)
        os.chdir(req["cwd"])
        sys.path[0] = req["cwd"]  # as ``python -m`` puts the folder it starts in first
        # the command line a judge started afresh shows (ps, a test that looks for it), set while
        # the environment it is kept beside is still the zygote's
        import setproctitle  # the zygote's (imported there once)

        setproctitle.setproctitle(" ".join([sys.executable, "-m", "kopt.measure.child", *req["argv"]]))
        spare.as_started_afresh(req["env"], output=log_fd)
        sys.argv = [child.__file__, *req["argv"]]
        child.main(req["argv"])  # it ends the process
    except BaseException:  # noqa: BLE001 - the judge never returns into the zygote's code
        with contextlib.suppress(Exception):
            import traceback

            traceback.print_exc()
    os._exit(code)


if __name__ == "__main__":
    import setproctitle  # noqa: F401 - each judge's
    import torch  # noqa: F401 - what a judge imports first (kopt.measure.spare.fork)

    # as the judge keeps itself: no process of this user (a kernel's, say) may trace or write into
    # the process every later judge is forked from
    child.keep_to_itself()
    _serve(socket.socket(fileno=int(sys.argv[1])))
