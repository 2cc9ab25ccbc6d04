"""The judge's handle on the kernel's process (the trust boundary, seen from the trusted side).

``KernelProcess`` starts ``python -m kopt.inside`` (behind a profiler when one wraps it) with one
end of a Unix socket, orders its calls (kopt.measure.wire), and ends it: the process, its group
and every process it started, found because the judge is their subreaper (kopt.measure.reaper),
are killed before the judge writes anything. The judge itself never imports the kernel's module
and never runs its code: what crosses is the arena's handle and orders one way, plain JSON answers
the other way, and the answers only ever say what the kernel's process claims about itself.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from kopt.measure import reaper, wire
from kopt.measure.faults import HarnessFault, KernelFault

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # every control character but tab and newline

# signals that may come from outside the kernel (the OOM killer, a user, the job's end): no verdict,
# the job fails, where ``KernelProcess._from_outside`` finds they did
EXTERNAL = {signal.SIGKILL, signal.SIGTERM, signal.SIGINT, signal.SIGHUP}
OWN_SIGNAL_WAIT_S = 1.0  # how long a signal to the whole job takes to reach the judge as well


def oom_kills() -> int | None:
    """The OOM killer's kills on this machine so far (/proc/vmstat's ``oom_kill``: a cgroup's
    OOM kills count there too); None where it cannot be read. ``KOPT_OOM_KILLS_FILE`` names a file
    of that form to read instead (the tests' stand-in for the OOM killer)."""
    try:
        lines = Path(os.environ.get("KOPT_OOM_KILLS_FILE") or "/proc/vmstat").read_text().splitlines()
        return next((int(line.split()[1]) for line in lines if line.startswith("oom_kill ")), None)
    except (OSError, ValueError, IndexError):
        return None


def kernel_caches_root() -> Path:
    """Where every version's own compilers' caches lie (``kernel_cache``), each writable by its kernel."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kopt" / "kernel-caches"


def _short_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def kernel_cache(kernel: str) -> dict[str, str]:
    """The compilers' caches of one version (or baseline), its own: a kernel may write there and
    nowhere that another version, a baseline or a trusted job reads (Snakemake's source cache and
    the user's Triton, Inductor and CUDA caches stay out of its reach). Kept across runs, so a
    rerun does not compile again. A file's caches are kept per content (a review: a version written
    anew at the same path inherited what the last one left there), the last content's removed;
    what the file imports or dispatches to is not in that key."""
    root = kernel_caches_root()
    if kernel.startswith("torch:"):
        d = root / _short_hash(kernel.encode())
    else:
        path = Path(kernel).resolve()
        base = root / _short_hash(str(path).encode())
        d = base / (_short_hash(path.read_bytes()) if path.is_file() else "folder")
        for stale in (x for x in base.glob("*") if x != d):
            shutil.rmtree(stale, ignore_errors=True)  # links inside are removed, never followed
    d.mkdir(parents=True, exist_ok=True)
    return {
        "KOPT_KERNEL_CACHE": str(d),
        "TRITON_CACHE_DIR": str(d / "triton"),
        "TRITON_CACHE_AUTOTUNING": "1",  # autotuned once: the clock's process reuses the timing process's choice
        "TORCHINDUCTOR_CACHE_DIR": str(d / "inductor"),
        # Inductor's C++ (CPU) kernels otherwise build a precompiled header in the process's fresh TMPDIR
        # on every run, cached kernel or not: 10.3 of a torch.compile baseline's 26.7 CPU-s on the CPU
        "TORCHINDUCTOR_CPP_CACHE_PRECOMPILE_HEADERS": "0",
        "CUDA_CACHE_PATH": str(d / "nv"),
        "XDG_CACHE_HOME": str(d / "cache"),  # torch_extensions and the rest of ~/.cache's users
    }


@functools.lru_cache(maxsize=1)
def triton_tools_env() -> dict[str, str]:
    """What Triton asks two programs for on its first launch in every process, asked once here and
    told to every kernel process: ``ldconfig -p`` (where libcuda is: TRITON_LIBCUDA_PATH) and
    ``ptxas --version`` (part of its cache key: TRITON_MOCK_PTX_VERSION, the same text, of the
    Hopper and the Blackwell ptxas together, so the key changes when either does). Under Nsight
    Compute, which follows every process its target starts, the two cost a clock process's first
    call about 0.4 s (docs/runs/h100-clock/). Empty off a machine with libcuda or without Triton."""
    try:
        listing = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True, timeout=30).stdout
        spec = importlib.util.find_spec("triton")
    except (OSError, subprocess.SubprocessError, ImportError, ValueError):
        return {}
    libcuda = [ln.split()[-1] for ln in listing.splitlines() if "libcuda.so.1" in ln]
    dirs = [os.path.dirname(p) for p in libcuda if os.path.exists(p)]
    if not dirs or spec is None or not spec.submodule_search_locations:
        return {}
    bin_dir = Path(spec.submodule_search_locations[0]) / "backends" / "nvidia" / "bin"
    versions = []
    for tool, env in (("ptxas", "TRITON_PTXAS_PATH"), ("ptxas-blackwell", "TRITON_PTXAS_BLACKWELL_PATH")):
        try:
            path = os.environ.get(env) or str(bin_dir / tool)
            versions.append(subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout)
        except (OSError, subprocess.SubprocessError):
            return {"TRITON_LIBCUDA_PATH": dirs[0]}
    return {"TRITON_LIBCUDA_PATH": dirs[0], "TRITON_MOCK_PTX_VERSION": "".join(versions)}


def copy_report(src: Path, dst: Path, limit_bytes: int = 1 << 30) -> None:
    """A file the kernel's process wrote (a trace, assembly), copied by the judge: a regular file
    only, at most ``limit_bytes``; anything else is left out. The process may still be running and
    swap the name meanwhile (a review: a link to /dev/zero copied without end, a FIFO that held the
    judge): the name is opened once, never through a link, nor waiting on a FIFO, nor as a terminal,
    and what that descriptor is, is what is checked and copied, never past the limit."""
    insane = KernelFault(f"{src.name}: the kernel's process left no plain file of a sane size there")
    try:
        fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as e:
        raise KernelFault(f"{src.name}: the kernel's process left no plain file there ({e.strerror})") from None
    try:
        if not _plain(fd, limit_bytes):  # a directory, a device, a FIFO, too large
            raise insane
        f = os.fdopen(fd, "rb", buffering=0)
    except BaseException:
        os.close(fd)
        raise
    with f:
        dst.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(dst, "wb") as g:
                left = limit_bytes + 1  # the file may grow after the check
                while left and (chunk := f.read(min(1 << 20, left))):
                    g.write(chunk)
                    left -= len(chunk)
            if not left:
                raise insane
        except BaseException:
            dst.unlink(missing_ok=True)
            raise


def _plain(fd: int, limit_bytes: int) -> bool:
    st = os.fstat(fd)
    return stat.S_ISREG(st.st_mode) and st.st_size <= limit_bytes


def output_block(path: str, kernel: str, limit: int = 1 << 20) -> str:
    """What the kernel's process wrote to its standard output and error (``path``, in its scratch:
    kopt.inside.sandbox.close_handed_files; its last ``limit`` bytes) as a block for the judge's log,
    every line marked ``kernel| `` and no control character left: an escape sequence rewrote the
    judge's lines on a terminal, and a review's own "--- its end ---" and "judge: ... kept" lines
    passed for the judge's. '' where it wrote nothing. Opened as a file of the kernel's: a regular
    one only, no link followed, never waiting on a pipe."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or not st.st_size:
            return ""
        f.seek(max(0, st.st_size - limit))
        text = f.read(limit).decode(errors="replace")
    lines = CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text.rstrip()).split("\n")
    cut = f", its last {limit} bytes" if st.st_size > limit else ""
    block = "\n".join(f"kernel| {line}" for line in lines)
    return f"--- the kernel's process's output ({kernel}{cut}) ---\n{block}\n--- its end ---"


class KernelProcess:
    """One kernel process for one judge. ``ask`` sends an order and returns the answer, or raises
    KernelFault: the kernel's own fault line, a crash (with its signal), or no answer in time."""

    OWNED: set[int] = set()  # this judge's kernel processes not yet ended: their exit statuses are their owners'

    def __init__(
        self,
        kernel: str,
        *,
        wrapper: list[str] | None = None,
        sandbox: bool = True,
        timeout_s: float = 600,
        begin: bool = True,
        env: dict[str, str] | None = None,
        spare=None,
    ):
        reaper.become_subreaper()
        self.kernel, self.timeout_s, self.where, self.wrapped = kernel, timeout_s, None, bool(wrapper)
        self.seq, self.loaded, self.target = 0, False, None
        self.gpu_order = None  # the bound's interprocess events with this process (kopt.measure.bound)
        self.maps_arena = False  # it was given a config's arena (kopt.measure.trial)
        # inside the job's folder for this judge when there is one: gone with it, even if the judge is killed
        self.scratch = tempfile.mkdtemp(prefix="kopt-inside-", dir=os.environ.get("KOPT_SCRATCH_ROOT"))
        told = {k: v for k, v in triton_tools_env().items() if k not in os.environ}  # the user's settings stand
        # its standard output and error, where they are a file (the judge's log), go here instead
        # (kopt.inside.sandbox.close_handed_files): the judge copies them to its log at the end
        self.output = os.path.join(self.scratch, "output.log")
        ours_env = {"PYTHONUNBUFFERED": "1", "TMPDIR": self.scratch, "KOPT_KERNEL_OUTPUT": self.output}
        ours_env |= {**told, **kernel_cache(kernel)}
        # torch.compile compiles in this process, not in a pool of workers it starts (on the H100
        # Triton found no GPU backend in pmpp_v2/vectorsum's workers; idle workers outlive a call)
        ours_env.setdefault("TORCHINDUCTOR_COMPILE_THREADS", os.environ.get("TORCHINDUCTOR_COMPILE_THREADS", "1"))
        env = {**os.environ, **ours_env, **(env or {})}
        self.profiler_tmp, self.sandboxed = None, sandbox
        self.confined = False  # confined before its Python starts (kopt.inside.confined): every process exec'd
        try:
            self.proc, ours = self._launch(wrapper, env, spare)
        except BaseException:  # no process: nothing will end() it
            self._remove_folders()
            raise
        KernelProcess.OWNED.add(self.proc.pid)
        self.oom_kills_at_start = oom_kills()  # a signal it dies of is the OOM killer's only if this rises
        self.sock, self.sandbox = ours, None
        self.precision: dict | None = None  # torch's TF32 switches, asked and reported (kopt.measure.child._go)
        self.notes: list[str] = []  # how the interpreter ran the kernel unlike a GPU, as the process said (_keep_notes)
        self.ended, self.left = False, False  # end() has run; the process had left by itself by then
        if begin:
            try:
                self.begin()
            except BaseException:  # its caller never holds it: ended here, its folders with it
                self.end(keep=self.others())
                raise

    def _launch(self, wrapper: list[str] | None, env: dict[str, str], spare) -> tuple:
        """The process (forked from ``spare`` where there is one and no profiler wraps it) and the
        judge's end of its channel."""
        if wrapper:  # a profiler starts the process it wraps
            wrapper, env = self._profiler_apart(wrapper, env)
            if spare is not None:
                spare.discard()
                spare = None
        if spare is not None:  # forked from the judge (kopt.measure.spare): no second torch import
            try:
                return spare.launch(env)
            except OSError:  # it died before it was told (killed from outside): started afresh instead
                spare.discard()
        # Landlock confines no thread already running: the sandbox applied, then exec, every thread of
        # the kernel's process is born confined (a profiler's injection and CUDA start theirs early)
        self.confined = self.sandboxed
        pipes = ["--pipes-of", self.profiler_tmp] if self.profiler_tmp else []
        confine = [sys.executable, "-m", "kopt.inside.confined", *pipes, self.scratch] if self.confined else []
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            proc = subprocess.Popen(
                [*(wrapper or []), *confine, sys.executable, "-m", "kopt.inside", str(theirs.fileno())],
                pass_fds=[theirs.fileno()],
                stdin=subprocess.DEVNULL,
                env=env,
                start_new_session=True,
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        return proc, ours

    def _remove_folders(self) -> None:
        for folder in (self.scratch, self.profiler_tmp):
            if folder:
                shutil.rmtree(folder, ignore_errors=True)

    def _profiler_apart(self, wrapper: list[str], env: dict[str, str]) -> tuple[list[str], dict[str, str]]:
        """The profiler's own temporary files in a folder of the judge's, its target's in the scratch.
        Nsight Compute's front end (trusted, unsandboxed) keeps its report as it fills it, its
        process tracker's pipes and a lock in its TMPDIR; its injection in the target keeps a lock
        in the target's (H200: docs/runs/h200-ncu-tmpdir/). In the kernel's scratch, which the kernel
        writes, the report was the kernel's to rewrite. The sandbox lets the kernel write the
        tracker's pipes alone (kopt.inside.sandbox.profiler_pipes): without them a program the
        kernel's process starts (Triton's gcc) dies of SIGSEGV under Nsight Compute."""
        program = shutil.which("env")
        if program is None:
            raise HarnessFault(
                "kopt: no `env` program on PATH: a profiler's target cannot be given the kernel's scratch"
            )
        self.profiler_tmp = tempfile.mkdtemp(prefix="kopt-profiler-", dir=os.environ.get("KOPT_SCRATCH_ROOT"))
        return [*wrapper, program, f"TMPDIR={self.scratch}"], {**env, "TMPDIR": self.profiler_tmp}

    def begin(self, **extra) -> None:
        """The process's first order (its scratch folder, its sandbox; ``extra``: more of the order),
        once it has started (``begin`` False: several processes start at once, each begun in turn)."""
        order = {"op": "start", "scratch": self.scratch, "sandbox": self.sandboxed, "confined": self.confined}
        self.sandbox = self.ask(order | extra, timeout_s=300)["sandbox"]
        if self.wrapped:  # the profiler's target, found before any code of the kernel's has run
            self.target = _wrapped_target(self.proc.pid)

    def ask(
        self,
        order: dict,
        *,
        fds: list[int] | None = None,
        timeout_s: float | None = None,
        while_running=None,
        spin: bool = False,
    ) -> dict:
        """``order`` sent, then the answer; ``while_running()`` is called between the two (the judge's
        own readings while the kernel works: the GPU clock); ``spin``: the answer is polled for."""
        self.seq += 1
        order = {**order, "seq": self.seq}
        try:
            wire.send_pickle(self.sock, order, fds)
            if while_running is not None:
                while_running()
            msg = wire.recv_reply(self.sock, timeout_s or self.timeout_s, spin=spin)
        except wire.ChannelTimeout:
            self.end(keep=self.others())
            raise KernelFault(
                f"timed out: no answer for {timeout_s or self.timeout_s:g} s{self._at()}; the process was killed"
            ) from None
        except (wire.ChannelClosed, OSError):  # a broken pipe, a reset, a channel the judge closed
            raise KernelFault(self._died()) from None
        except ValueError as e:
            raise KernelFault(f"{e}{self._at()}") from None
        if msg.get("seq") != self.seq:  # a frame written into the channel out of turn
            raise KernelFault(
                f"the kernel's process answered out of turn (order {self.seq}, answer {msg.get('seq')!r}){self._at()}"
            )
        self._keep_notes(msg.get("notes"))
        if "fault" in msg:
            text = str(msg["fault"])[:2000]
            # kopt's own fault (the GPU binding) comes, if ever, before the kernel is imported
            harness = msg.get("harness") and order["op"] == "go" and not self.loaded
            raise HarnessFault(text) if harness else KernelFault(text)
        self.loaded = self.loaded or order["op"] == "go"
        reaper.reap(exclude=frozenset(KernelProcess.OWNED))  # ended orphans: no zombie piles up
        return msg

    def _keep_notes(self, said) -> None:
        """The process's lines on how it ran the kernel unlike a GPU would (kopt.inside.interpreter: a
        Triton launch torch.compile could not hold), recorded as its word, never a verdict's ground:
        strings only, each one line of at most 400 characters, 4 at most."""
        for line in said if isinstance(said, list) else []:
            line = " ".join(line.split())[:400] if isinstance(line, str) else ""
            if line and line not in self.notes and len(self.notes) < 4:
                self.notes.append(line)

    def _at(self) -> str:
        return f" while running {self.where}" if self.where else ""

    def _died(self) -> str:
        """Why the channel closed: the process's exit, once it has ended (an external signal: the job fails)."""
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.end(keep=self.others())
            return f"the kernel's process closed its channel{self._at()} and was killed"
        asked = rc < 0 and -rc in EXTERNAL and not self.ended and threading.current_thread() is threading.main_thread()
        if asked and self._from_outside():
            self.end(keep=self.others())
            if -rc != signal.SIGKILL:  # SIGINT's handler raises KeyboardInterrupt (a verdict); SIGHUP may be ignored
                signal.signal(-rc, signal.SIG_DFL)
            os.kill(os.getpid(), -rc)  # the judge ends as its kernel did: the job fails, no verdict
        if asked:  # a verdict: a kernel that killed itself so left every later version undecided
            return (
                f"the process was killed by {signal.Signals(-rc).name}{self._at()}, not by the OOM killer nor with "
                "its job (the judge was not stopped): a signal it sent itself, or one sent to it alone"
            )
        if rc < 0:
            return f"the process was killed by {signal.Signals(-rc).name}{self._at()}"
        return f"the kernel's process exited with code {rc}{self._at()}"

    def _from_outside(self) -> bool:
        """The signal the kernel's process died of came from outside: the OOM killer's count rose
        since it started (or cannot be read here), or the judge is stopped too within
        ``OWN_SIGNAL_WAIT_S`` (a job's or a cluster's signal reaches all its processes; the
        judge's own ends it while it waits here). Else the kernel sent it itself."""
        if self.oom_kills_at_start is None or oom_kills() != self.oom_kills_at_start:
            return True  # (the count rises before the OOM killer's signal is sent)
        try:
            time.sleep(OWN_SIGNAL_WAIT_S)
        except KeyboardInterrupt:  # the judge interrupted too
            return True
        return False

    def finish(self, keep: frozenset[int] = frozenset()) -> None:
        """Tell the kernel's process to leave, then end it (``end``), giving a profiler that wraps it
        time to write its report (Nsight Compute writes it once its target has left)."""
        with contextlib.suppress(OSError):
            wire.send_pickle(self.sock, {"op": "bye"})
        self.end(grace_s=120.0 if self.wrapped else 2.0, keep=keep)

    def end(self, grace_s: float = 0.0, keep: frozenset[int] = frozenset()) -> None:
        """Kill the kernel's process and everything it started; no process of the kernel's remains
        but ``keep`` (other kernel processes of this judge, started beside it, and theirs).
        ``grace_s``: how long a profiler wrapping it may take to write its report after it left."""
        if self.ended:  # once: its pid may be another process's by now
            return
        self.ended = True
        with contextlib.suppress(OSError):
            self.sock.close()
        self._grace(grace_s, keep)
        self.left = self.proc.returncode is not None  # by itself, within its grace
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(ProcessLookupError):
            self.proc.kill()
        self.proc.wait()
        KernelProcess.OWNED.discard(self.proc.pid)
        reaper.sweep(keep=keep)
        said = output_block(self.output, self.kernel)
        if said:
            print(said, flush=True)
        self._remove_folders()  # what the judge wanted from the scratch is copied by now

    def _grace(self, grace_s: float, keep: frozenset[int]) -> None:
        """Up to ``grace_s`` for the process (a profiler wrapping the kernel's) to leave by itself,
        killing meanwhile what the kernel left behind (its orphans, the judge's children now): a
        profiler waits for every process it traced, and one that outlives its target must not hold
        the profiler from the next."""
        deadline = time.monotonic() + grace_s
        while True:
            try:
                self.proc.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic())))
                return
            except subprocess.TimeoutExpired:
                if time.monotonic() >= deadline:
                    return
                reaper.sweep(keep=keep | {self.proc.pid})
                self._kill_stragglers()

    def _kill_stragglers(self) -> None:
        """Under a profiler that waits for every process its target started (Nsight Compute, itself
        their subreaper): kill the kernel's Python processes there but the target, leaving by itself."""
        if self.target is None:
            return
        for pid in reaper.descendants(self.proc.pid):
            if pid != self.target and _runs(pid, sys.executable):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)

    def others(self) -> frozenset[int]:
        """This judge's other kernel processes not yet ended (``keep`` when this one ends)."""
        return frozenset(KernelProcess.OWNED - {self.proc.pid})

    def scratch_file(self, name: str) -> Path:
        return Path(self.scratch) / name


def _runs(pid: int, executable: str) -> bool:
    try:
        return os.path.realpath(f"/proc/{pid}/exe") == os.path.realpath(executable)
    except OSError:
        return False


def _wrapped_target(wrapper: int) -> int | None:
    """The one process under ``wrapper`` that runs this Python (the kernel's, before its code ran)."""
    found = [p for p in reaper.descendants(wrapper) if _runs(p, sys.executable)]
    return found[0] if len(found) == 1 else None
