"""The trust boundary on the CPU: kernels that attack the judge's verdict, its result files or its
process end `incorrect` or `failed` (never a pass with wrong outputs, never a forged figure), and
each attack is proved to have run (its log). See docs/trust.md and docs/threat_model.md."""

import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from kopt.measure import reaper
from tests.helpers import FIXTURES, ROOT, run_version

ATTACKS = FIXTURES / "attacks"


@pytest.fixture
def attack(tmp_path, monkeypatch):
    """Where an attack logs (a folder the sandbox lets kernels write) and the results it aims at."""
    kernel_dir = tmp_path / "kernel"
    kernel_dir.mkdir()
    log = kernel_dir / "attack.log"
    monkeypatch.setenv("KOPT_ATTACK_LOG", str(log))
    monkeypatch.setenv("KOPT_KERNEL_WRITABLE", str(kernel_dir))
    monkeypatch.setenv("KOPT_ATTACK_TARGET", str(tmp_path / "out"))

    def lines() -> list[str]:  # each once: on a GPU each of the clock's processes imports the kernel too
        assert log.is_file(), "the attack never ran: the test proves nothing"
        return list(dict.fromkeys(log.read_text().splitlines()))

    return lines


def _verdicts(corr, df) -> str:
    return " ".join([str(corr["status"]), str(corr["error"])] + [str(e) for e in df["error"]])


@pytest.mark.parametrize("kernel", ["patch_sum.py", "patch_reductions.py", "lazy_patch.py"])
def test_a_kernel_that_patches_the_comparison_and_skips_rows_is_not_passed(tiny, tmp_path, run_params, attack, kernel):
    """The issue's first exploit (Tensor.sum of bool made 0, three quarters of the rows), every other
    reduction a comparison uses, and the same patch made lazily after the checks of early calls: the
    judge compares in its own process, so the skipped rows are seen."""
    corr, df, _ = run_version(tiny, ATTACKS / kernel, run_params, tmp_path)
    assert any("patched" in line for line in attack())
    assert corr["status"] in ("incorrect", "failed") or (df["status"] == "failed").all(), _verdicts(corr, df)
    assert "outside atol" in _verdicts(corr, df) or "replaced" in _verdicts(corr, df) or "NaN" in _verdicts(corr, df)


def test_a_kernel_that_rewrites_its_channel_is_failed_by_the_tripwire(tiny, tmp_path, run_params, attack):
    """The issue's second exploit (json.dump scaling every '*_us'): the judge writes every result
    file; the Guard in the kernel's process names what was replaced."""
    corr, df, _ = run_version(tiny, ATTACKS / "patch_channel.py", run_params, tmp_path)
    assert attack() == ["patched json.dumps, json.dump, pickle.loads"]
    assert corr["status"] == "failed" and "the kernel replaced json.dump" in corr["error"], _verdicts(corr, df)


def test_a_forked_rewriter_does_not_outlive_the_verdict(tiny, tmp_path, run_params, attack):
    """The issue's third exploit: a double-forked process in a session of its own, waiting to rewrite
    the results. The judge is its subreaper and kills it before anything is written. On the CPU: on a
    GPU the rewriter, a CUDA process, also fails the timing by name
    (tests/gpu/test_gpu_bound.py::test_work_moved_to_another_process_fails_with_the_process_named)."""
    corr, df, out = run_version(tiny, ATTACKS / "forks_rewriter.py", {**run_params, "device": "cpu"}, tmp_path)
    pids = [int(line.split()[1]) for line in attack() if line.startswith("rewriter")]
    assert pids and corr["status"] == "pass" and (df["status"] == "ok").all(), _verdicts(corr, df)
    before = (out / "bench.csv").read_text()
    time.sleep(0.5)
    assert (out / "bench.csv").read_text() == before
    assert not [p for p in pids if os.path.exists(f"/proc/{p}")], "the rewriter outlived the verdict"
    assert not [line for line in attack() if line.startswith("rewrote")]


def test_a_kernel_that_writes_results_at_import_or_exit_changes_nothing(tiny, tmp_path, run_params, attack):
    corr, df, out = run_version(tiny, ATTACKS / "writes_from_atexit.py", run_params, tmp_path)
    assert corr["status"] == "pass", _verdicts(corr, df)
    assert "forged" not in (out / "bench.csv").read_text()
    assert pd.read_csv(out / "bench.csv")["median_us"].notna().all()
    lines = attack()
    assert "wrote at exit" not in lines  # the kernel's process ends with os._exit, and is killed besides
    if _landlock():
        assert lines[0] == "refused at import: PermissionError"
        assert lines[1] in ("refused /dev/kmsg: PermissionError", "refused /dev/kmsg: FileNotFoundError")


def test_a_kernel_cannot_rewrite_the_judges_log_and_its_output_is_kept(tiny, tmp_path, run_params, attack):
    """The judge's log was the kernel's standard output: a review truncated it through that
    descriptor and wrote a verdict there. Confined, the process's output goes to a file in its
    scratch, which the judge copies to its log, marked as the kernel's, when the process ends."""
    corr, df, out = run_version(tiny, ATTACKS / "rewrites_the_log.py", run_params, tmp_path)
    log = (out / "steps.log").read_text()
    assert corr["status"] == "pass", _verdicts(corr, df)
    assert attack()[0].startswith("rewrote fd 1: ")  # a file of its own, or the log: the attack ran
    if _landlock():
        assert all(line.endswith("output.log") for line in attack()), attack()
        judges, _, kernels = log.partition("--- the kernel's process's output (")
        assert judges.startswith("[") and "judge: v9 kept" not in judges, log[:500]
        assert "kernel| judge: v9 kept" in kernels and kernels.rstrip().endswith("--- its end ---"), log[-2000:]


def test_the_kernels_output_is_marked_line_by_line_with_no_control_character(tmp_path):
    """A review printed its own "--- its end ---" and a line in the judge's form after it, and
    escape sequences that rewrote the judge's lines on a terminal: every relayed line is marked,
    every control character but tab and newline escaped."""
    from kopt.measure.boundary import output_block

    forged = "ok\x1b[2A\r\n--- its end ---\n[    0.7 s] judge: v9 kept\x07\n\tindented\n"
    (tmp_path / "output.log").write_text(forged)
    lines = output_block(str(tmp_path / "output.log"), "k.py").splitlines()
    assert lines[0] == "--- the kernel's process's output (k.py) ---" and lines[-1] == "--- its end ---"
    assert lines[1:-1] == [
        "kernel| ok\\x1b[2A\\x0d",
        "kernel| --- its end ---",
        "kernel| [    0.7 s] judge: v9 kept\\x07",
        "kernel| \tindented",
    ]
    (tmp_path / "output.log").unlink()
    (tmp_path / "output.log").symlink_to(tmp_path / "secret")
    (tmp_path / "secret").write_text("not the kernel's")
    assert output_block(str(tmp_path / "output.log"), "k.py") == ""  # no link followed


def test_a_piped_standard_output_is_moved_too(tmp_path):
    """Where the judge's output is a pipe (``kopt ... | tee``), the kernel's goes to its scratch too."""
    from kopt.inside import sandbox

    if sandbox.abi() < 1:
        pytest.skip("no Landlock here: the sandbox applies nothing")
    out = tmp_path / "scratch" / "output.log"
    run = [sys.executable, "-m", "kopt.inside.confined", str(tmp_path / "scratch"), sys.executable, "-c", "print('hi')"]
    env = {**os.environ, "KOPT_KERNEL_OUTPUT": str(out)}
    piped = subprocess.run(run, capture_output=True, text=True, cwd=ROOT, env=env, timeout=60, check=True)
    assert piped.stdout == "" and out.read_text() == "hi\n", (piped.stdout, piped.stderr)


def test_a_kernel_that_swaps_its_output_buffer_is_incorrect(tiny, tmp_path, run_params, attack):
    """It points the output at memory of its own: the judge reads its own mapping, still poisoned."""
    corr, df, _ = run_version(tiny, ATTACKS / "swaps_buffers.py", run_params, tmp_path)
    assert "swapped" in attack()
    assert corr["status"] == "incorrect" and "NaN" in corr["error"], _verdicts(corr, df)


def test_a_kernel_right_only_when_it_thinks_it_is_checked_fails_its_timing(tiny, tmp_path, run_params, attack):
    corr, df, _ = run_version(tiny, ATTACKS / "right_when_checked.py", run_params, tmp_path)
    assert "skipped rows on a timed call" in attack()
    assert corr["status"] == "pass" and (df["status"] == "failed").all(), _verdicts(corr, df)
    assert "wrong or unwritten" in df["error"].iloc[0]


def _landlock() -> bool:
    from kopt.inside import sandbox

    return sandbox.abi() >= 6


def test_the_kernel_cannot_kill_or_read_the_judge(tiny, tmp_path, run_params, attack, monkeypatch):
    """With Landlock (ABI 6+ here), signals to the judge, its memory and an abstract unix socket made
    outside the sandbox (the judge's own CUDA makes one, ``@cuda-uvmfd-...``) are refused, and the
    honest work that follows passes. Without it, a killed judge fails the job with no verdict."""
    monkeypatch.setenv("KOPT_ATTACK_SOCKET", f"kopt-test-outside-{os.getpid()}")
    with socket.socket(socket.AF_UNIX) as outside:
        outside.bind(f"\0kopt-test-outside-{os.getpid()}")
        outside.listen()
        if not _landlock():
            with pytest.raises(Exception, match="stopped from outside|SIGKILL"):
                run_version(tiny, ATTACKS / "reaches_the_judge.py", run_params, tmp_path)
            return
        corr, df, _ = run_version(tiny, ATTACKS / "reaches_the_judge.py", run_params, tmp_path)
    refused = ["memory refused: PermissionError", "signal refused: PermissionError", "socket refused: PermissionError"]
    assert attack() == refused
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), _verdicts(corr, df)


def test_the_kernel_reaches_no_daemon_over_a_socket_path_or_tcp(tiny, tmp_path, run_params, attack, monkeypatch):
    """A daemon outside the sandbox runs what it is asked, outside the judge's process tree too (a
    review's kernel had a user's tmux server rewrite ``bench.csv`` after the verdict). As root (CI,
    the GPU machines) its socket path is covered in the kernel's own mount namespace
    (kopt.inside.socket_paths): refused; with Landlock ABI 4+ no TCP port is reached. Neither
    listener hears a byte, and the honest work that follows passes."""
    from kopt.inside import sandbox

    with socket.socket(socket.AF_UNIX) as unix, socket.socket(socket.AF_INET) as tcp:
        unix.bind(str(tmp_path / "daemon.sock"))
        tcp.bind(("127.0.0.1", 0))
        for listener in (unix, tcp):
            listener.listen()
            listener.setblocking(False)
        monkeypatch.setenv("KOPT_ATTACK_SOCKET_PATH", str(tmp_path / "daemon.sock"))
        monkeypatch.setenv("KOPT_ATTACK_TCP_PORT", str(tcp.getsockname()[1]))
        corr, df, _ = run_version(tiny, ATTACKS / "reaches_a_daemon.py", run_params, tmp_path)
        heard = [_accepted(listener) for listener in (unix, tcp)]
    filtered = platform.machine() in ("x86_64", "aarch64") and sandbox.abi() >= 1  # no connect (syscall_filter)
    covered = os.geteuid() == 0 and sandbox.abi() >= 1
    path = "refused: PermissionError" if filtered else "refused: ConnectionRefusedError" if covered else "reached"
    tcp_said = "refused: PermissionError" if sandbox.abi() >= 4 else "reached"
    assert attack() == [f"path socket {path}", f"tcp {tcp_said}"]
    assert heard == [path == "reached", tcp_said == "reached"]
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), _verdicts(corr, df)
    if os.geteuid() == 0 and sandbox.abi() >= 4:
        line = corr["provenance"]["sandbox"]
        assert "unix socket path(s) hidden" in line and "TCP bind and connect refused" in line, line


@pytest.mark.skipif(os.geteuid() != 0, reason="a mount namespace needs root here (CI and the GPU machines are)")
def test_socket_paths_left_reachable_are_mps_and_the_users_only(tmp_path, monkeypatch):
    """Every socket path the table lists is covered in the process's own namespace but CUDA MPS's
    folder and the user's ``KOPT_KERNEL_SOCKETS`` (CUDA's MPS client connects there); outside that
    process every path still connects (its mounts are private)."""
    names = ("daemon", "mps/control", "mine/x", "odd name")
    (tmp_path / "mps").mkdir(), (tmp_path / "mine").mkdir()
    listeners = [socket.socket(socket.AF_UNIX) for _ in names]
    for listener, name in zip(listeners, names, strict=True):
        listener.bind(str(tmp_path / name))
        listener.listen()
    table = tmp_path / "unix"  # /proc/net/unix's layout; a path with a space kept whole
    rows = [f"0000: 00000002 00000000 00010000 0001 01 {i} {tmp_path / n}" for i, n in enumerate(names)]
    table.write_text("Num RefCount Protocol Flags Type St Inode Path\n" + "\n".join(rows) + "\n")
    monkeypatch.setenv("CUDA_MPS_PIPE_DIRECTORY", str(tmp_path / "mps"))
    monkeypatch.setenv("KOPT_KERNEL_SOCKETS", str(tmp_path / "mine"))
    child = (
        "import socket, sys\nfrom kopt.inside import socket_paths\n"
        f"socket_paths.UNIX_TABLE = {str(table)!r}\nprint(socket_paths.hide())\n"
        "for p in sys.argv[1:]:\n    s = socket.socket(socket.AF_UNIX)\n"
        "    print(s.connect_ex(p) == 0)\n"
    )
    got = subprocess.run(
        [sys.executable, "-c", child, *(str(tmp_path / n) for n in names)], capture_output=True, text=True, cwd=ROOT
    )
    assert got.stdout.splitlines() == ["2 unix socket path(s) hidden", "False", "True", "True", "False"], got.stderr
    for name, listener in zip(names, listeners, strict=True):
        with socket.socket(socket.AF_UNIX) as s:
            assert s.connect_ex(str(tmp_path / name)) == 0, name
        listener.close()


def _accepted(listener: socket.socket) -> bool:
    try:
        listener.accept()[0].close()
        return True
    except BlockingIOError:
        return False


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGTERM"])
def test_a_kernel_that_kills_itself_is_failed_not_taken_for_an_outside_stop(
    tiny, tmp_path, run_params, attack, monkeypatch, sig
):
    """An adversary's version: its own SIGKILL read as the OOM killer's, so the job failed with no
    verdict, every rerun did the same and every later version stayed undecided. The OOM killer's
    count did not rise and the judge was not stopped with it: its verdict, failed."""
    monkeypatch.setenv("KOPT_ATTACK_SIGNAL", sig)
    counted = tmp_path / "vmstat"  # the OOM killer's count, fixed: another job's OOM kill changes nothing here
    counted.write_text("oom_kill 3\n")
    monkeypatch.setenv("KOPT_OOM_KILLS_FILE", str(counted))
    corr, _, _ = run_version(tiny, ATTACKS / "kills_itself.py", run_params, tmp_path)
    assert attack() == [f"sent itself {sig}"]
    assert corr["status"] == "failed" and f"killed by {sig}" in corr["error"], corr["error"]
    assert "a signal it sent itself" in corr["error"]


@pytest.mark.parametrize("sig", ["SIGKILL", "SIGINT"])
def test_a_kernel_the_oom_killer_ends_fails_the_job_with_no_verdict(
    tiny, tmp_path, run_params, attack, monkeypatch, sig
):
    """The same death with the OOM killer's count risen with it (a stand-in file for /proc/vmstat,
    raised by the kernel as the OOM killer's kill does): not the kernel's verdict; the job fails so
    that a rerun measures again. SIGINT too (the judge's own handler raised KeyboardInterrupt, and
    that was written as a verdict)."""
    from kopt.measure import runner

    monkeypatch.setenv("KOPT_ATTACK_SIGNAL", sig)
    monkeypatch.setenv("KOPT_ATTACK_OOM", "1")
    counted = tmp_path / "kernel" / "vmstat"  # where the attack may write
    counted.write_text("oom_kill 3\n")
    monkeypatch.setenv("KOPT_OOM_KILLS_FILE", str(counted))
    with pytest.raises(runner.Interrupted, match=f"stopped from outside by {sig}"):
        run_version(tiny, ATTACKS / "kills_itself.py", run_params, tmp_path)
    assert attack() == [f"sent itself {sig}"] and not (tmp_path / "out" / "correctness.json").exists()


def test_the_sweep_kills_every_descendant_and_only_those(tmp_path):
    reaper.become_subreaper()
    kept = subprocess.Popen(["sleep", "30"])
    script = "import os,time\nif os.fork()==0:\n os.setsid()\n time.sleep(30)\nos._exit(0)"
    subprocess.run(["python3", "-c", script], check=True)  # its child is an orphan, now ours
    time.sleep(0.2)
    orphans = [p for p in reaper.descendants() if p != kept.pid]
    assert orphans, "the orphan did not come to this process: not a subreaper"
    assert reaper.sweep(keep=frozenset({kept.pid})) >= 1
    assert kept.poll() is None and not [p for p in orphans if os.path.exists(f"/proc/{p}")]
    kept.kill()
    kept.wait()


def test_a_forged_answer_written_into_the_channel_is_out_of_turn(tiny, tmp_path, run_params, attack):
    """pygpubench's fd_overwrite class: every order carries a number its answer must repeat."""
    corr, df, _ = run_version(tiny, ATTACKS / "writes_the_channel.py", run_params, tmp_path)
    assert any(line.startswith("forged an answer") for line in attack())
    assert corr["status"] == "failed" and "out of turn" in corr["error"], _verdicts(corr, df)


def test_a_kernel_writes_only_its_own_caches(tiny, tmp_path, run_params, attack, monkeypatch):
    """The user's ~/.cache holds the scripts Snakemake's trusted jobs run (its source cache) and other
    versions' compiled kernels: a kernel gets caches of its own (found by an adversarial review)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    corr, df, _ = run_version(tiny, ATTACKS / "poisons_caches.py", run_params, tmp_path)
    assert corr["status"] == "pass", _verdicts(corr, df)
    lines = attack()
    assert "wrote triton" in lines  # its own Triton cache (TRITON_CACHE_DIR)
    if _landlock():
        assert lines[:2] == ["refused .cache: PermissionError", "refused .triton: PermissionError"]
    assert not (tmp_path / "home" / ".triton" / "kopt-attack-test").exists()


def test_a_sweep_of_many_ended_processes_takes_one_scan_a_round():
    """A kernel that forks and exits in chains leaves thousands of ended processes to the judge:
    the sweep collects them without scanning /proc once per process (it once took minutes)."""
    reaper.become_subreaper()
    pids = []
    for _ in range(300):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        pids.append(pid)
    time.sleep(0.2)
    t0 = time.monotonic()
    reaper.sweep()
    assert time.monotonic() - t0 < 5
    assert not [p for p in pids if os.path.exists(f"/proc/{p}")]


@pytest.mark.parametrize("lazy", [False, True])
def test_a_kernel_whose_own_clock_runs_slow_changes_no_figure_on_the_interpreter(
    tiny, tmp_path, run_params, attack, monkeypatch, lazy
):
    """Issue 31: perf_counter and the events' elapsed_time at half speed in the kernel's process,
    where kopt's code there holds them, after making the Guard (the tripwire there) blind, at import
    or lazily from a garbage-collector callback. On the CPU the judge's own round trip times each
    call: the medians are the judge's, and the kernel's own figure (host_us) is only its report.
    (On a GPU Nsight Compute's record decides and holds the events: tests/gpu/test_gpu_clock.py.)"""
    import numpy as np

    if lazy:
        monkeypatch.setenv("KOPT_ATTACK_LAZY", "1")
    corr, df, out = run_version(tiny, ATTACKS / "slows_its_clock.py", {**run_params, "device": "cpu"}, tmp_path)
    assert attack() == ["patched perf_counter and Event.elapsed_time x0.5" + (" lazily" if lazy else "")]
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), _verdicts(corr, df)
    samples = pd.read_csv(out / "bench_samples.csv")
    for key, mine in samples.groupby("config_key"):
        row = df[df["config_key"] == key].iloc[0]
        assert row["clock"] == "judge" and row["median_us"] == pytest.approx(
            float(np.median(mine["wall_us"])), rel=1e-4
        )
        # the kernel's own clock said about half of each call's time
        assert (mine["host_us"] < 0.6 * mine["wall_us"]).all(), mine[["host_us", "wall_us"]]


def test_statistics_patched_in_the_kernels_process_change_no_figure_on_the_interpreter(
    tiny, tmp_path, run_params, attack
):
    """Issue 31: numpy's, statistics' and sorted's results halved, and kopt's own trace reader and
    interval, in the kernel's process: the judge computes every figure from its own per-call
    records, so each bench.csv median is the median of the judge's samples, and on the judge's clock.
    (On a GPU, Nsight Compute's: tests/gpu/test_gpu_clock.py.)"""
    import numpy as np

    corr, df, out = run_version(tiny, ATTACKS / "patches_statistics.py", {**run_params, "device": "cpu"}, tmp_path)
    assert attack() == [
        "patched numpy.median, numpy.percentile, statistics, sorted, torchtrace.per_call_us, median_ci_pct"
    ]
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), _verdicts(corr, df)
    samples = pd.read_csv(out / "bench_samples.csv")
    for key, mine in samples.groupby("config_key"):
        row = df[df["config_key"] == key].iloc[0]
        assert row["clock"] == "judge" and set(mine["clock"]) == {"judge"}
        assert row["median_us"] == pytest.approx(float(np.median(mine["us"])), rel=1e-5)
        assert mine["us"].values == pytest.approx(mine["wall_us"].values, abs=0.01)
        assert row["host_us"] == pytest.approx(float(np.median(mine["host_us"])), rel=1e-4)  # not halved either


def test_a_kernel_process_that_times_out_is_ended_alone():
    """The judge runs several kernel processes at once on a GPU (the in-process timing's and the
    clock's): one that times out is ended with what it started, and no other; an end runs once."""
    from kopt.measure.boundary import KernelProcess
    from kopt.measure.faults import KernelFault
    from tests.helpers import ROOT

    kernel = str(ROOT / "examples" / "softmax" / "kernels" / "v1.py")
    a, b = (KernelProcess(kernel, sandbox=False, timeout_s=60, begin=False) for _ in range(2))
    try:
        with pytest.raises(KernelFault, match="timed out"):
            a.ask({"op": "start", "scratch": a.scratch, "sandbox": False}, timeout_s=1e-6)
        assert a.ended and b.proc.poll() is None
        a.end()  # a second end does nothing (its pid may be another process's by now)
        b.begin()
        assert b.sandbox == "none: off" and b.proc.poll() is None
    finally:
        b.end()
    assert not b.left  # ended by the judge, not left by itself


WAITING_PROFILER = """import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # a subreaper, as Nsight Compute is: the kernel's orphans come here
subprocess.Popen(sys.argv[1:], pass_fds=[int(sys.argv[-1])])
while True:  # and it leaves only once every process it traced has
    try:
        os.wait()
    except ChildProcessError:
        break
"""

FORKS_A_STRAGGLER = """import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(120)
    os._exit(0)

def run_kernel(x, y):
    y.copy_(x)
"""


def test_a_profiler_that_waits_for_the_kernels_stragglers_is_not_held_by_them(tmp_path):
    """A profiler that waits for every process its target started (Nsight Compute) would wait for
    one the kernel forked at import: once the kernel's process leaves, the judge kills the
    kernel's other processes under the profiler, which then leaves within seconds, by itself."""

    from kopt.measure.boundary import KernelProcess

    (tmp_path / "profiler.py").write_text(WAITING_PROFILER)
    (tmp_path / "kernel.py").write_text(FORKS_A_STRAGGLER)
    proc = KernelProcess(str(tmp_path / "kernel.py"), wrapper=[sys.executable, str(tmp_path / "profiler.py")],
                         sandbox=False, timeout_s=60, env={"TRITON_INTERPRET": "1"})  # fmt: skip
    try:
        assert proc.target is not None and proc.target != proc.proc.pid
        proc.ask({"op": "go", "env": {}, "device": "cpu", "kernel": proc.kernel, "ref": None, "builds": None})
        under = reaper.descendants(proc.proc.pid)
        assert len(under) >= 2, "the kernel's straggler is not under the profiler: the test proves nothing"
        t0 = time.monotonic()
        proc.finish(keep=proc.others())
        assert proc.left and time.monotonic() - t0 < 10
        assert not [p for p in under if os.path.exists(f"/proc/{p}")]
    finally:
        proc.end()


PROFILER_WITH_A_REPORT = """import os, subprocess, sys
from pathlib import Path
tmp = Path(os.environ["TMPDIR"])  # as Nsight Compute's front end: its tracker's pipes and its report there
(tmp / "NVIDIA-treetracker-test").mkdir()
(tmp / "NVIDIA-treetracker-test" / "pipe").write_text("")
(tmp / "nsight-compute-test.ncu-rep").write_text("")
Path(os.environ["KOPT_TEST_PROFILER_TMP"]).write_text(str(tmp))
# as its --log-file: the record it fills, handed to its target open for writing
record = os.open(os.environ["KOPT_TEST_PROFILER_RECORD"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
os.write(record, b"the record")
sys.exit(subprocess.run(sys.argv[1:], pass_fds=[int(sys.argv[-1]), record]).returncode)
"""

WRITES_THE_PROFILERS_FILES = """import os, stat
from pathlib import Path
front, said = Path(Path(os.environ["KOPT_TEST_PROFILER_TMP"]).read_text()), []
tracker, scratch = front / "NVIDIA-treetracker-test", Path(os.environ["TMPDIR"])


def handed_record():
    record = os.environ["KOPT_TEST_PROFILER_RECORD"]
    fds = [int(fd) for fd in os.listdir("/proc/self/fd") if os.path.realpath(f"/proc/self/fd/{fd}") == record]
    if not fds:
        raise OSError("not handed")
    os.write(fds[0], b" forged")


attempts = {
    "pipe": lambda: open(tracker / "pipe", "a").write("forged"),
    "report": lambda: open(front / "nsight-compute-test.ncu-rep", "a").write("forged"),
    "record": handed_record,
    "link": lambda: os.symlink("/etc/passwd", tracker / "link"),
    "file": lambda: open(tracker / "file", "w").write("planted"),
    "move": lambda: os.rename(tracker / "pipe", scratch / "pipe"),
    "device": lambda: os.mknod(scratch / "disk", stat.S_IFBLK | 0o600, os.makedev(7, 0)),
}
for name, attempt in attempts.items():
    try:
        attempt()
        said.append(f"{name} done")
    except OSError:
        said.append(f"{name} refused")
Path(os.environ["TMPDIR"], "said.txt").write_text(" ".join(said))


def run_kernel(**inputs):
    pass
"""


def test_a_profilers_report_is_out_of_the_kernels_reach_and_its_tracker_is_not(tmp_path, monkeypatch):
    """Nsight Compute's front end (trusted) keeps its report as it fills it in its TMPDIR: a folder
    of the judge's, not the scratch the kernel writes, which its target still gets (the injection
    keeps a lock there), and gone with the process. It hands its target the record it fills open
    for writing (H200): closed before the kernel is imported. The sandbox lets the kernel write the front
    end's process tracker's pipes (every program the kernel's process starts reports there: under
    Nsight Compute Triton's gcc died of SIGSEGV without them, H200), and make no link, file or
    device node there or anywhere (a review: a block device made in the scratch opened the disk to
    a root kernel), nor move the pipes out."""

    from kopt.inside import sandbox
    from kopt.measure.boundary import KernelProcess

    (tmp_path / "profiler.py").write_text(PROFILER_WITH_A_REPORT)
    (tmp_path / "kernel.py").write_text(WRITES_THE_PROFILERS_FILES)
    monkeypatch.setenv("KOPT_TEST_PROFILER_TMP", str(tmp_path / "profiler_tmp.txt"))
    record = tmp_path.resolve() / "record.csv"
    monkeypatch.setenv("KOPT_TEST_PROFILER_RECORD", str(record))
    proc = KernelProcess(str(tmp_path / "kernel.py"), wrapper=[sys.executable, str(tmp_path / "profiler.py")],
                         timeout_s=60, env={"TRITON_INTERPRET": "1"})  # fmt: skip
    try:
        profilers = Path((tmp_path / "profiler_tmp.txt").read_text())
        targets = dict(
            v.split("=", 1) for v in Path(f"/proc/{proc.target}/environ").read_text().split("\0") if "=" in v
        )
        assert targets["TMPDIR"] == proc.scratch and profilers.is_dir()
        assert not profilers.is_relative_to(proc.scratch) and not Path(proc.scratch).is_relative_to(profilers)
        proc.ask({"op": "go", "env": {}, "device": "cpu", "kernel": proc.kernel, "ref": None, "builds": None})
        said = (Path(proc.scratch) / "said.txt").read_text()
        if sandbox.abi() >= 1:
            refused = "report refused record refused link refused file refused move refused device refused"
            assert said == f"pipe done {refused}", said
            closed = proc.sandbox.partition("handed open for writing: ")[2].split(", ")
            assert "process tracker" in proc.sandbox and str(record) in closed, proc.sandbox
            assert record.read_text() == "the record"
            assert (profilers / "nsight-compute-test.ncu-rep").read_text() == ""
    finally:
        proc.end()
    assert not profilers.exists() and not Path(proc.scratch).exists()


A_THREAD_BEFORE_KOPT = """import threading, time
threading.Thread(target=lambda: time.sleep(3600), daemon=True, name="injection").start()
"""

HIJACKS_A_THREAD = """import ctypes, os, signal, threading, time
from pathlib import Path
said, HANDLER = [], ctypes.CFUNCTYPE(None, ctypes.c_int)


def handler(sig):  # runs on the thread the signal was sent to
    try:
        Path(os.environ["KOPT_TEST_TARGET"]).write_text("forged")
        said.append("written")
    except OSError:
        said.append("refused")


keep = HANDLER(handler)
libc = ctypes.CDLL(None)
libc.signal.argtypes = [ctypes.c_int, HANDLER]
libc.signal(signal.SIGUSR2, keep)
for t in threading.enumerate():
    if t is not threading.main_thread():
        signal.pthread_kill(t.ident, signal.SIGUSR2)
time.sleep(0.5)
Path(os.environ["TMPDIR"], "said.txt").write_text(" ".join(said) or "no thread")


def run_kernel(**inputs):
    pass
"""


@pytest.mark.parametrize("wrapped", [True, False])
def test_a_thread_started_before_the_sandbox_is_confined_too(tmp_path, monkeypatch, wrapped):
    """Landlock confines the thread that applies it, never one already running: a kernel that ran
    its code on such a thread through a signal handler wrote outside its sandbox (a review, on a
    clock process: torch's and CUDA's threads start before its first order; Nsight Compute's
    injection's too). A kernel's process is confined before its Python starts, wrapped by a
    profiler or not, so a thread started before kopt's code (here by ``sitecustomize``, as a
    user's site may) is confined too."""

    from kopt.inside import sandbox
    from kopt.measure.boundary import KernelProcess

    if sandbox.abi() < 1:
        pytest.skip("no Landlock here: nothing is confined")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(A_THREAD_BEFORE_KOPT)
    (tmp_path / "kernel.py").write_text(HIJACKS_A_THREAD)
    (tmp_path / "profiler.py").write_text(PROFILER_WITH_A_REPORT)
    target = tmp_path / "results.csv"
    target.write_text("the judge's")
    monkeypatch.setenv("PYTHONPATH", f"{site}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    monkeypatch.setenv("KOPT_TEST_TARGET", str(target))
    monkeypatch.setenv("KOPT_TEST_PROFILER_TMP", str(tmp_path / "profiler_tmp.txt"))
    monkeypatch.setenv("KOPT_TEST_PROFILER_RECORD", str(tmp_path / "record.csv"))
    wrapper = [sys.executable, str(tmp_path / "profiler.py")] if wrapped else None
    proc = KernelProcess(str(tmp_path / "kernel.py"), wrapper=wrapper, timeout_s=60, env={"TRITON_INTERPRET": "1"})
    try:
        proc.ask({"op": "go", "env": {}, "device": "cpu", "kernel": proc.kernel, "ref": None, "builds": None})
        assert (Path(proc.scratch) / "said.txt").read_text() == "refused"
        assert target.read_text() == "the judge's" and "NOT the" not in proc.sandbox, proc.sandbox
    finally:
        proc.end()


def test_a_process_confined_as_it_runs_says_which_threads_were_not(tmp_path):
    """Confined at its first order (a process forked from a spare: one thread), a process's line
    names the threads already running then, which Landlock left as they were."""

    from kopt.inside import sandbox

    if sandbox.abi() < 1:
        pytest.skip("no Landlock here: nothing is confined")
    script = (
        "import threading, time\nfrom kopt.inside import sandbox\n"
        "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
        f"print(sandbox.apply({str(tmp_path)!r}) + sandbox.loose_threads())\n"
    )
    line = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60).stdout
    assert line.startswith("landlock") and "NOT the 1 thread(s) already running" in line, line


@pytest.mark.parametrize("wrapper", [["/nonexistent/profiler"], ["sh", "-c", "exit 7", "sh"]])
def test_a_kernel_process_that_never_starts_leaves_no_folder(tmp_path, monkeypatch, wrapper):
    """A wrapper that cannot be run, or whose target dies before its first answer: the process is
    never handed to its caller, so its scratch and the profiler's folder go with the failure."""
    from kopt.measure.boundary import KernelProcess
    from kopt.measure.faults import KernelFault

    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv("KOPT_SCRATCH_ROOT", str(root))
    with pytest.raises((OSError, KernelFault)):
        KernelProcess(str(tmp_path / "kernel.py"), wrapper=wrapper, sandbox=False, timeout_s=30)
    assert not list(root.iterdir())


def test_a_spare_killed_before_its_launch_is_replaced_by_a_process_started_afresh():
    """A spare (kopt.measure.spare) that an outside signal ended before the judge told it anything
    is no fault of the kernel's: the judge starts the kernel's process afresh, and it answers."""
    import signal

    from kopt.measure import spare
    from kopt.measure.boundary import KernelProcess

    s = spare.fork()
    os.kill(s.pid, signal.SIGKILL)
    time.sleep(0.2)
    proc = KernelProcess(str(ROOT / "examples" / "softmax" / "kernels" / "v1.py"), spare=s)
    try:
        assert isinstance(proc.proc, subprocess.Popen) and proc.proc.pid != s.pid and proc.sandbox
    finally:
        proc.finish()


@pytest.mark.parametrize("clock, last", [(True, "triton driver loaded"), (False, "triton key")])
def test_nothing_is_loaded_from_the_versions_cache_before_the_sandbox(tmp_path, monkeypatch, clock, last):
    """Triton's driver library (cuda_utils.so) is loaded from the version's own cache, which its
    kernel may write (a review: a library planted by one run was loaded unsandboxed by the next
    run's clock processes at their start): a clock process makes its CUDA context at its start and
    loads Triton's driver only once sandboxed, after answering `start`."""
    import torch

    from kopt.inside import sandbox, serve

    steps = []
    monkeypatch.setenv("KOPT_CLOCK_CONTEXT", "1") if clock else monkeypatch.delenv("KOPT_CLOCK_CONTEXT", False)
    monkeypatch.setattr(torch, "empty", lambda *a, **k: steps.append("context"))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(serve, "_triton_ready", lambda: steps.append("triton driver loaded"))
    monkeypatch.setattr(serve, "_triton_key", lambda: steps.append("triton key"))
    monkeypatch.setattr(sandbox, "apply", lambda scratch, also=(): steps.append("sandbox") or "landlock (test)")
    monkeypatch.setenv("TMPDIR", os.environ.get("TMPDIR", "/tmp"))  # `start` sets it for its process: put back after
    s = serve.Session(None, clock=serve._clock_context())
    monkeypatch.setattr(s, "reply", lambda **answer: steps.append("reply"))
    s.start({"scratch": str(tmp_path / "scratch"), "sandbox": True})
    assert steps == [*(["context"] if clock else []), "sandbox", "reply", last]


def test_a_report_is_copied_only_from_a_plain_file_and_never_past_its_limit(tmp_path, monkeypatch):
    """The judge copies a trace or assembly the kernel's process wrote while that process may still
    swap the name (a review: a link to /dev/zero was copied without end, a FIFO held the judge):
    a link, a FIFO, a folder or an oversized file is left out with a fault, at once, even where the name was a
    plain file when looked at (the swap after the look, simulated); a plain file is copied."""
    from kopt.measure.boundary import copy_report

    plain = tmp_path / "trace.json"
    plain.write_bytes(b"x" * 100)
    copy_report(plain, tmp_path / "out" / "trace.json", limit_bytes=100)
    assert (tmp_path / "out" / "trace.json").read_bytes() == b"x" * 100
    (tmp_path / "zero").symlink_to("/dev/zero")
    (tmp_path / "link").symlink_to(plain)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "folder").mkdir()
    cases = [("zero", 1 << 20), ("link", 1 << 20), ("fifo", 1 << 20), ("folder", 1 << 20), ("trace.json", 99)]
    open_before = len(os.listdir("/proc/self/fd"))
    assert [_refused_at_once(copy_report, tmp_path / n, lim) for n, lim in cases] == [True] * 5
    assert len(os.listdir("/proc/self/fd")) == open_before  # no descriptor left open
    looked = os.lstat(plain)  # the FIFO was a plain file when looked at, and swapped after
    monkeypatch.setattr(
        os, "lstat", lambda p, *a, **k: looked if str(p).endswith("fifo") else os.stat(p, follow_symlinks=False)
    )
    assert _refused_at_once(copy_report, tmp_path / "fifo", 1 << 20)


def _refused_at_once(copy_report, src, limit) -> bool:
    import threading

    from kopt.measure.faults import KernelFault

    said = []

    def copy() -> None:
        try:
            copy_report(src, src.parent / "got" / src.name, limit_bytes=limit)
            said.append("copied")
        except KernelFault:
            said.append("refused")

    t = threading.Thread(target=copy, daemon=True)  # a FIFO opened for reading waits for a writer
    t.start()
    t.join(timeout=5)
    return said == ["refused"] and not (src.parent / "got" / src.name).exists()


def test_a_version_written_anew_at_the_same_path_gets_caches_of_its_own(tmp_path, monkeypatch):
    """A version's caches are kept across runs and written by its kernel: one written anew at the
    same path (an honest v0 after a hostile one) must not inherit them (a review); a rerun of the
    same file keeps them."""
    from kopt.measure.boundary import kernel_cache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    kernel = tmp_path / "v0.py"
    kernel.write_text("def run_kernel(x, y):\n    y.copy_(x)\n")
    first = kernel_cache(str(kernel))["KOPT_KERNEL_CACHE"]
    assert kernel_cache(str(kernel))["KOPT_KERNEL_CACHE"] == first
    (Path(first) / "triton").mkdir()
    kernel.write_text("def run_kernel(x, y):\n    y.copy_(x * 1)\n")
    assert kernel_cache(str(kernel))["KOPT_KERNEL_CACHE"] != first
    assert not Path(first).exists()  # the last content's caches removed: one content's kept a path
    assert kernel_cache("torch:eager")["KOPT_KERNEL_CACHE"] == kernel_cache("torch:eager")["KOPT_KERNEL_CACHE"]
