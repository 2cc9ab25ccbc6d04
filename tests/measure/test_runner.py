"""The child process and its time limit (kopt.measure.runner): a hang is killed, interrupted is not
failed, and no kernel process outlives its run (Linux /proc). Issue 10."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kopt.measure import runner
from tests.helpers import BAD, ROOT, run_version


def test_hang_is_killed_after_the_time_limit(tiny, tmp_path, run_params):
    params = {**run_params, "timeout_s": 3}
    t0 = time.monotonic()
    corr, df, _ = run_version(tiny, BAD / "hangs.py", params, tmp_path)
    assert corr["status"] == "failed"
    assert "timed out: no progress for 3 s in config M=" in corr["error"]
    assert time.monotonic() - t0 < 60
    failed = [c for c in corr["configs"] if c["result"] == "FAILED"]
    assert len(failed) == 1 and failed[0]["key"] in corr["error"]


def _kernel_children(parent: int) -> list[int]:
    """PIDs of kopt.measure.child processes whose parent is ``parent``."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit() and _ppid(d) == parent:
            try:
                if b"kopt.measure.child" in (d / "cmdline").read_bytes():
                    out.append(int(d.name))
            except OSError:
                continue
    return out


def _wait_for(fn, timeout=60.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        got = fn()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError("timed out waiting")


def _gone(pid: int, timeout=10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # a zombie of ours counts as gone
            if (Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]) == "Z":
                return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_kernel_killed_from_outside_fails_the_job_not_the_version(tiny, tmp_path, run_params, sig):
    """As the OOM killer would: no verdict is written, so a rerun measures again."""
    params = {**run_params, "timeout_s": 120}

    def kill_child():
        pid = _wait_for(lambda: _kernel_children(os.getpid()))[0]
        time.sleep(1.0)
        os.kill(pid, sig)

    threading.Thread(target=kill_child, daemon=True).start()
    with pytest.raises(runner.Interrupted, match=f"stopped from outside by {sig.name}"):
        run_version(tiny, BAD / "hangs.py", params, tmp_path)
    assert not (tmp_path / "out" / "correctness.json").exists()


RUN = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal (a background shell ignores it)
sys.path.insert(0, {root!r})
from tests.helpers import run_version
from pathlib import Path
params = {{"device": "auto", "timeout_s": 120, "bench": {{"warmup_ms": 1, "rep_ms": 1, "min_samples": 1,
          "max_samples": 1, "flush_l2": False, "cpu_warmup": 1, "cpu_samples": 1}},
          # its own claims: on a GPU machine this test's process holds the GPU's lock after a gated test
          "gate": {{"lock_dir": {tmp!r} + "/locks"}}}}
run_version(Path({tiny!r}), Path({kernel!r}), params, Path({tmp!r}))
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_no_kernel_process_outlives_an_interrupted_job(tiny, tmp_path, sig):
    """Ctrl-C, SIGTERM or kill -9 of the job's process: its kernel child is gone too."""
    code = RUN.format(root=str(ROOT), tiny=str(tiny), kernel=str(BAD / "hangs.py"), tmp=str(tmp_path))
    job = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT)
    try:
        child = _wait_for(lambda: _kernel_children(job.pid))[0]
        time.sleep(1.0)
        job.send_signal(sig)
        job.wait(timeout=30)
        assert _gone(child), f"kernel process {child} outlived the job ({sig.name})"
    finally:
        job.kill()


def test_kill_9_of_snakemake_stops_the_kernel_process(tiny, tmp_path):
    """Snakemake killed with SIGKILL leaves its job running; the job sees it gone and stops its
    kernel child. (The stand-in for Snakemake carries "snakemake" in its command line.)"""
    code = RUN.format(root=str(ROOT), tiny=str(tiny), kernel=str(BAD / "hangs.py"), tmp=str(tmp_path))
    outer = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', sys.argv[1]]); time.sleep(600)"
    fake = subprocess.Popen([sys.executable, "-c", outer, code, "snakemake"], cwd=ROOT)
    try:
        jobs = _wait_for(
            lambda: [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _ppid(p) == fake.pid]
        )
        child = _wait_for(lambda: _kernel_children(jobs[0]))[0]
        fake.kill()
        fake.wait()
        assert _gone(child), "the kernel process outlived Snakemake"
        assert _gone(jobs[0]), "the job outlived Snakemake"
    finally:
        fake.kill()


def _ppid(d: Path) -> int | None:
    try:
        return int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _reference_request(tiny) -> dict:
    from kopt.steps.common import child_request
    from kopt.workspace.target import load_workspace

    ws = load_workspace(tiny, versions=False)
    return child_request(ws, str(tiny / "kernels" / "v0.py"), {"device": "cpu"})


def test_a_held_child_starts_its_task_only_at_its_go(tiny, tmp_path):
    with runner.Child("reference", _reference_request(tiny), log_path=tmp_path / "log", held=True) as child:
        time.sleep(3)  # long enough to import torch and choose a device, were it not held
        assert child.proc.poll() is None and not child.prog.exists()  # waiting, nothing begun
        child.go({})
        out = child.wait(timeout_s=60)
    assert out.ok, out.error
    assert out.timeline["go"] >= 3 and out.timeline["go"] <= out.timeline["ready"] <= out.timeline["end"]
    assert [r["key"] for r in out.records] == [r["key"] for r in out.result["configs"]] != []


JOB = """
import json, sys, time
from kopt.measure import runner
child = runner.Child("reference", json.loads(sys.argv[1]), wrapper=["sh", "-c", '"$@" & wait', "sh"], held=True)
print(child.proc.pid, flush=True)
time.sleep(600)
"""


def test_a_held_child_whose_job_is_gone_leaves(tiny):
    """Under a wrapper (as under a profiler) the held child is the wrapper's child. When the job is
    killed (kill -9, the OOM killer) the wrapper dies with it, maybe before the held child has even
    started: nothing would give it its go, so it leaves by itself."""
    job = subprocess.Popen(
        [sys.executable, "-c", JOB, json.dumps(_reference_request(tiny))], stdout=subprocess.PIPE, text=True
    )
    wrapper = int(job.stdout.readline())
    held = _wait_for(lambda: _kernel_children(wrapper), timeout=30)[0]
    job.kill()  # at once: the held child is still starting
    job.wait()
    assert _gone(held, timeout=60)


def test_closing_kills_a_released_child_whose_wrapper_died(tiny):
    wrapper = ["sh", "-c", '"$@" & wait', "sh"]
    with runner.Child("reference", _reference_request(tiny), wrapper=wrapper, held=True) as child:
        held = _wait_for(lambda: _kernel_children(child.proc.pid))[0]
        os.kill(child.proc.pid, signal.SIGKILL)  # the wrapper only, as when a profiler crashes
        child.proc.wait()
        assert not _gone(held, timeout=1)
    assert _gone(held)


PROFILER = """import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # a subreaper, as Nsight Compute is
subprocess.Popen(sys.argv[1:], pass_fds=[int(sys.argv[-1])]).wait()
"""

WRAPPED_JOB = """
import json, sys
from kopt.measure import runner
runner.run_child("correctness", json.loads(sys.argv[1]), timeout_s=600, wrapper=[sys.executable, sys.argv[2]])
"""


def test_no_profiled_kernel_process_outlives_a_terminated_job(tiny, tmp_path):
    """A profiler wrapping a kernel's process is a session of its own, outside the judge's group,
    and the process it wraps dies with it, not with the judge. SIGTERM of the job while that
    process is stuck importing its kernel (not reading its orders): both are gone with the job."""
    (tmp_path / "profiler.py").write_text(PROFILER)
    importing = Path(f"/dev/shm/kopt-test-importing-{os.getpid()}-{tmp_path.name}")  # the sandbox allows /dev/shm
    (tmp_path / "stuck.py").write_text(
        f"import pathlib, time\n\npathlib.Path({str(importing)!r}).touch()\ntime.sleep(600)\n"
    )
    req = {**_reference_request(tiny), "kernel": str(tmp_path / "stuck.py")}
    job = subprocess.Popen(
        [sys.executable, "-c", WRAPPED_JOB, json.dumps(req), str(tmp_path / "profiler.py")], cwd=ROOT
    )
    profiler = kernel = None
    try:
        judge = _wait_for(lambda: _kernel_children(job.pid))[0]
        profiler = _wait_for(lambda: [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
                                      and _ppid(p) == judge and b"profiler.py" in (p / "cmdline").read_bytes()])[0]  # fmt: skip
        kernel = _wait_for(
            lambda: [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _ppid(p) == profiler]
        )[0]
        _wait_for(importing.exists)  # into the kernel's import, however slow the machine
        job.send_signal(signal.SIGTERM)
        job.wait(timeout=30)
        assert _gone(profiler) and _gone(kernel), "the profiler or the kernel's process it wraps outlived the job"
    finally:
        job.kill()
        importing.unlink(missing_ok=True)
        for pid in (profiler, kernel):  # not left behind when it fails
            if pid:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def test_a_child_that_dies_before_its_go_is_a_crash(tiny):
    with runner.Child("reference", _reference_request(tiny), wrapper=["sh", "-c", "exit 7"], held=True) as child:
        child.go({})
        out = child.wait(timeout_s=10)
    assert out.status == "crashed" and "exited with code 7" in out.error


def _finished(tmp_path, rc: int, device: str | None) -> runner.ChildOutcome:
    out = tmp_path / "result.json"
    out.write_text(json.dumps({"ok": False, "error": "this process computes on GPU a, not on GPU-b"}))
    state = {"current": None, "device": device, "timeline": {}, "t0": time.monotonic(), "phases": {}}
    return runner._outcome("check_then_time", rc, False, 20, out, [], state, "")


def test_a_harness_fault_fails_the_job_only_before_any_kernel_ran(tmp_path):
    from kopt.measure.faults import HARNESS_EXIT

    with pytest.raises(runner.HarnessError, match="not on GPU-b; the job fails, no verdict was written"):
        _finished(tmp_path, HARNESS_EXIT, None)
    # once the child named its device a kernel may have run: its exit code is its own crash, a verdict
    assert _finished(tmp_path, HARNESS_EXIT, "cuda").status == "raised"


@pytest.mark.parametrize("place", ["/dev/shm", "chosen"])
def test_the_judges_folder_never_lies_where_a_kernel_may_write(tmp_path, monkeypatch, place):
    """Every kernel may write /dev/shm and the user's KOPT_KERNEL_WRITABLE: with TMPDIR there, a
    kernel forged the judge's progress records (a review): the judge refuses to start, with one line
    naming the folder, before it writes anything there."""
    import tempfile

    from kopt.measure import runner

    if place == "chosen":
        monkeypatch.setenv("KOPT_KERNEL_WRITABLE", str(tmp_path))
        root = tmp_path / "tmp"
        root.mkdir()
    else:
        root = Path(tempfile.mkdtemp(dir="/dev/shm"))
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    try:
        with pytest.raises(runner.HarnessError, match="where every kernel's sandbox lets it write.*set TMPDIR"):
            runner.Child("correctness", {})
        assert list(root.iterdir()) == []
    finally:
        if place != "chosen":
            root.rmdir()


def test_a_confined_process_dies_with_its_parent_from_its_start(tmp_path):
    """kopt.inside.confined sets the parent-death signal before its sandbox and exec, and it holds
    across the exec: a kernel's process whose judge or profiler dies once it runs is not left behind
    (one whose parent dies during Python's own start-up is: the judge's sweep collects it)."""
    started = tmp_path / "scratch" / "started"  # where the sandbox lets it write
    program = ["/bin/sh", "-c", f'touch "{started}"; exec sleep 600']
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT_OF_CONFINED, str(tmp_path / "scratch"), json.dumps(program), str(started)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    child = int(parent.stdout.readline())
    try:
        assert parent.wait(timeout=30) == 0
        assert _gone(child), "the confined process outlived its parent"
    finally:
        parent.kill()
        with contextlib.suppress(ProcessLookupError):
            os.kill(child, signal.SIGKILL)


PARENT_OF_CONFINED = """
import json, os, subprocess, sys, time
scratch, program, started = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
p = subprocess.Popen([sys.executable, "-m", "kopt.inside.confined", scratch, *program], start_new_session=True)
print(p.pid, flush=True)
end = time.monotonic() + 30
while not os.path.exists(started) and time.monotonic() < end:
    time.sleep(0.02)
os._exit(0 if os.path.exists(started) else 1)  # the child running, its parent gone
"""
