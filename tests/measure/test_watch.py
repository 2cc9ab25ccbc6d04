"""The judge's readings of the kernel's process trees (kopt.measure.watch), on the CPU: a marker
file stands in for the GPU's device file (there is none here)."""

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from kopt.measure import reaper, watch
from kopt.profilers import gpus

HELPERS = r"""
import os, sys, time
def helper():
    f = open(sys.argv[1])  # stands in for /dev/nvidia0, held by every CUDA context
    print("started", flush=True)  # once it holds it (its parent's exit said nothing of that)
    time.sleep(3)
    os._exit(0)
if os.fork() == 0:  # a double fork: re-parented to the nearest subreaper, not under this process
    if os.fork() == 0:
        os.setsid()
        helper()
    os._exit(0)
os.wait()
time.sleep(3)
"""


def test_a_double_forked_gpu_helper_is_found_in_the_judges_tree(tmp_path, monkeypatch):
    """Issue 42's review: the watch followed the target's children only, and a double-forked helper
    is re-parented away from it; the whole tree under the judge is watched now, the kernel's own
    processes and the profiler's programs excepted."""
    mark = tmp_path / "nvidia0"
    mark.write_text("")

    monkeypatch.setattr(watch, "holds_gpu", _marker_holds(mark))
    reaper.become_subreaper()
    target = subprocess.Popen([sys.executable, "-c", HELPERS, str(mark)], stdout=subprocess.PIPE, text=True)
    try:
        target.stdout.readline()
        with watch.GpuHolders(os.getpid(), {target.pid}, None) as h:
            time.sleep(0.2)
        assert h.found and target.pid not in h.found, h.found
        assert all(p not in reaper.descendants(target.pid) for p in h.found)  # not the target's child any more
    finally:
        target.kill()
        target.wait()
        reaper.sweep()


def test_the_profilers_installation_is_the_folder_of_the_ncu_the_judge_runs(tmp_path):
    """H100: ``ncu`` is a shell script, and the folder of the wrapper's program (/usr/bin, sh's)
    held the kernel's Python helper too, which the watch then left out. The installation is the
    folder of the ncu the judge starts, where its path names Nsight Compute (any case); else none,
    and nothing is left out."""
    from kopt.measure.outside_clock import tool_home

    for folder in ("opt/nvidia/nsight-compute/2025.3.1", "usr/local/NVIDIA-Nsight-Compute-2025.3"):
        home = tmp_path / folder
        home.mkdir(parents=True)
        (home / "ncu").write_text("#!/bin/sh\n")
        (tmp_path / "bin").mkdir(exist_ok=True)
        link = tmp_path / "bin" / "ncu"
        link.unlink(missing_ok=True)
        link.symlink_to(home / "ncu")  # as /usr/local/cuda/bin/ncu is
        assert tool_home(str(link)) == str(home)
    assert tool_home("sh") is None


def _marker_holds(mark):
    def holds(pid: int, majors=None) -> bool:
        try:
            return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(mark) for fd in os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            return False

    return holds


def test_a_profiler_program_run_below_a_kernel_process_is_not_the_profilers(tmp_path, monkeypatch):
    """Issue 42's second review: one of Nsight Compute's own programs, run by the kernel's process
    with a library preloaded, could hold the GPU unseen: below a kernel's process nothing is left out."""
    mark = tmp_path / "nvidia0"
    mark.write_text("")
    monkeypatch.setattr(watch, "holds_gpu", _marker_holds(mark))
    home = tmp_path / "nsight-compute" / "2025.3.1"
    home.mkdir(parents=True)
    tool = home / "TreeLauncher"
    tool.write_bytes(Path("/bin/sleep").read_bytes())
    tool.chmod(0o755)
    run = f"import os, subprocess, sys, time\nf = open({str(mark)!r})\nsubprocess.Popen([{str(tool)!r}, '3'], pass_fds=[f.fileno()])\nprint('started', flush=True)\ntime.sleep(3)\n"
    target = subprocess.Popen([sys.executable, "-c", run], stdout=subprocess.PIPE, text=True)
    try:
        target.stdout.readline()
        with watch.GpuHolders(os.getpid(), {target.pid}, str(home), targets=[target.pid]) as h:
            time.sleep(0.2)
        assert any("TreeLauncher" in cmd for cmd in h.found.values()), h.found
        with watch.GpuHolders(os.getpid(), {target.pid}, str(home)) as h:  # the profiler's, were it not below
            time.sleep(0.2)
        assert not h.found, h.found
    finally:
        target.kill()
        target.wait()
        reaper.sweep()


MAIN_THREAD_LEAVES = r"""
import ctypes, sys, threading, time
def worker():
    time.sleep(0.3)  # once the main thread has exited
    f = open(sys.argv[1])  # stands in for /dev/nvidia0
    print("holding", flush=True)
    time.sleep(30)
threading.Thread(target=worker).start()
ctypes.CDLL(None).pthread_exit(None)  # the main thread alone: the process and its worker go on
"""


@contextlib.contextmanager
def _holding(tmp_path, monkeypatch, program: str):
    """``program`` run with a marker file standing in for the GPU's device file, once it holds it."""
    mark = tmp_path / "nvidia0"
    mark.write_text("")
    monkeypatch.setattr(gpus, "GPU_FILES", (str(mark),))  # holds_gpu reads it there
    p = subprocess.Popen([sys.executable, "-c", program, str(mark)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "holding"
        yield p.pid, str(mark)
    finally:
        p.kill()
        p.wait()


def test_a_process_whose_main_thread_has_exited_is_still_seen_holding_the_gpu(tmp_path, monkeypatch):
    """Its own list of open files is empty then; its other threads' lists are read (a review)."""
    with _holding(tmp_path, monkeypatch, MAIN_THREAD_LEAVES) as (pid, _):
        assert not os.listdir(f"/proc/{pid}/fd"), "the main thread still lists the files: the test proves nothing"
        assert watch.holds_gpu(pid, majors=set())


OWN_FILE_TABLE = r"""
import ctypes, os, sys, threading, time
def worker():
    ctypes.CDLL(None, use_errno=True).unshare(0x400)  # CLONE_FILES: a file table of this thread's own
    f = open(sys.argv[1])  # stands in for /dev/nvidia0, in that table only
    print("holding", flush=True)
    time.sleep(30)
threading.Thread(target=worker).start()
time.sleep(30)
"""


def test_a_thread_with_a_file_table_of_its_own_is_seen_holding_the_gpu(tmp_path, monkeypatch):
    """A review: the process's own list shows the main thread's table only."""
    with _holding(tmp_path, monkeypatch, OWN_FILE_TABLE) as (pid, mark):
        own = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        assert mark not in own, "the process's own list shows it: the test proves nothing"
        assert watch.holds_gpu(pid, majors=set())
