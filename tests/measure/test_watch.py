"""The judge's readings of the kernel's process trees (kopt.measure.watch), on the CPU: a marker
file stands in for the GPU's device file (there is none here)."""

import os
import subprocess
import sys
import time

from kopt.measure import reaper, watch

HELPERS = r"""
import os, sys, time
def helper():
    f = open(sys.argv[1])  # stands in for /dev/nvidia0, held by every CUDA context
    time.sleep(3)
    os._exit(0)
if os.fork() == 0:  # a double fork: re-parented to the nearest subreaper, not under this process
    if os.fork() == 0:
        os.setsid()
        helper()
    os._exit(0)
os.wait()
print("started", flush=True)
time.sleep(3)
"""


def test_a_double_forked_gpu_helper_is_found_in_the_judges_tree(tmp_path, monkeypatch):
    """Issue 42's review: the watch followed the target's children only, and a double-forked helper
    is re-parented away from it; the whole tree under the judge is watched now, the kernel's own
    processes and the profiler's programs excepted."""
    mark = tmp_path / "nvidia0"
    mark.write_text("")

    def holds(pid: int) -> bool:
        try:
            return any(os.readlink(f"/proc/{pid}/fd/{fd}") == str(mark) for fd in os.listdir(f"/proc/{pid}/fd"))
        except OSError:
            return False

    monkeypatch.setattr(watch, "holds_gpu", holds)
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


def test_the_profilers_programs_are_found_by_their_installation_not_by_the_wrappers_folder(tmp_path):
    """H100: ``ncu`` is a shell script, and the folder of the wrapper's program (/usr/bin, sh's)
    held the kernel's Python helper too, which the watch then left out. The installation is the
    ``nsight-compute*`` folder of a program under the wrapper; none, nothing is left out."""
    from types import SimpleNamespace

    from kopt.measure.outside_clock import _tool_dir

    install = tmp_path / "opt" / "nsight-compute" / "2025.3.1"
    (install / "target").mkdir(parents=True)
    tool = install / "target" / "ncu"
    tool.write_bytes(open("/bin/sleep", "rb").read())
    tool.chmod(0o755)
    for script, want in ((f"{tool} 3; true", str(install)), ("sleep 3; true", None)):
        wrapper = subprocess.Popen(["/bin/sh", "-c", script])
        try:
            time.sleep(0.3)  # the wrapper's child started
            assert _tool_dir(SimpleNamespace(proc=wrapper)) == want
        finally:
            wrapper.kill()
            wrapper.wait()
