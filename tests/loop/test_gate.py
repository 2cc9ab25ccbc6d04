"""The GPU gate, with a fake nvidia-smi: the idlest idle GPU, growing memory, waiting, giving up."""

import json
import os
import stat
import sys

import pytest

from kopt.loop import gate

FAKE = r"""#!{python}
import json, os, sys
state = json.load(open(os.environ["FAKE_SMI"]))
counter = os.environ["FAKE_SMI"] + ".n"
n = int(open(counter).read()) if os.path.exists(counter) else 0
if any(a.startswith("--query-gpu") for a in sys.argv):
    snap = state[min(n, len(state) - 1)]
    part = counter + "." + str(os.getpid())  # swapped in whole: a concurrent job's reader never sees it empty
    open(part, "w").write(str(n + 1))
    os.replace(part, counter)
    for g in snap["gpus"]:
        print(f"{{g['index']}}, GPU-{{g['index']}}, {{g['util']}}, {{g['mem']}}")
else:  # the processes of the snapshot whose GPU readings were just taken
    snap = state[min(max(n - 1, 0), len(state) - 1)]
    for a in snap.get("apps", []):  # a GPU's index, or [index, pid]
        gpu, pid = a if isinstance(a, list) else (a, 4242)
        print(f"GPU-{{gpu}}, {{pid}}, 1000")
"""


@pytest.fixture
def fake_smi(tmp_path, monkeypatch):
    exe = tmp_path / "bin" / "nvidia-smi"
    exe.parent.mkdir()
    exe.write_text(FAKE.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{exe.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setitem(gate.DEFAULTS, "lock_dir", str(tmp_path / "locks"))
    monkeypatch.setattr(gate, "_HELD", {})

    def states(*snaps):
        f = tmp_path / "smi.json"
        f.write_text(json.dumps(list(snaps)))
        monkeypatch.setenv("FAKE_SMI", str(f))

    return states


IDLE = {"gpus": [{"index": 0, "util": 0, "mem": 500}, {"index": 1, "util": 3, "mem": 500}]}


BUSY = {"gpus": [{"index": 0, "util": 95, "mem": 70000}, {"index": 1, "util": 0, "mem": 9000}], "apps": [0, 1]}


FAST = {"sample_s": 0, "poll_s": 10, "max_wait_s": 60}


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, s):
        self.t += s


def test_gate_picks_the_idlest_idle_gpu(fake_smi):
    fake_smi(IDLE, IDLE)
    env, rec = gate.acquire(FAST, "cuda", sleep=lambda s: None)
    assert env == {"CUDA_VISIBLE_DEVICES": "0"} and rec["gpu_index"] == 0 and rec["checks"] == 1


def test_a_claim_records_when_it_began_and_the_child_when_it_ended(fake_smi, monkeypatch):
    """The times benchmarks/gpu_overlap.py checks: a second claim of a held GPU (profile's torch
    fallback after ncu) keeps the first claim's time; run_gated adds when its child ended."""
    import time

    from kopt.measure import runner

    fake_smi(IDLE, IDLE, IDLE, IDLE)
    before = time.time()
    _, first = gate.acquire(FAST, "cuda", sleep=lambda s: None)
    _, again = gate.acquire(FAST, "cuda", sleep=lambda s: None)
    assert before - 1e-3 <= first["claimed_at"] == again["claimed_at"] <= time.time() + 1e-3  # (rounded to ms)
    monkeypatch.setattr(runner, "run_child", lambda *a, **kw: runner.ChildOutcome("ok", {}))
    out = runner.run_gated("profile", {}, {"gate": FAST, "device": "cuda"}, timeout_s=1)
    assert out.gate["claimed_at"] == first["claimed_at"] <= out.gate["child_ended_at"] <= time.time() + 1e-3


def test_gate_skips_a_gpu_with_growing_memory(fake_smi):
    grow = {"gpus": [{"index": 0, "util": 0, "mem": 9000}, {"index": 1, "util": 5, "mem": 500}]}
    fake_smi(IDLE, grow)
    env, _ = gate.acquire(FAST, "cuda", sleep=lambda s: None)
    assert env == {"CUDA_VISIBLE_DEVICES": "1"}


def test_gate_waits_for_a_busy_gpu_to_become_idle(fake_smi):
    fake_smi(BUSY, BUSY, IDLE, IDLE)
    clock = Clock()
    env, rec = gate.acquire(FAST, "cuda", sleep=clock.sleep, clock=clock)
    assert env["CUDA_VISIBLE_DEVICES"] == "0" and rec["checks"] == 2 and rec["waited_s"] == 10


def test_gate_gives_up_when_never_idle(fake_smi):
    fake_smi(BUSY)
    clock = Clock()
    with pytest.raises(gate.GateTimeout, match=r"gate: no idle GPU .*compute process"):
        gate.acquire(FAST, "cuda", sleep=clock.sleep, clock=clock)
    assert clock.t <= 60


def test_the_gates_own_process_on_the_gpu_is_no_other_jobs_work(fake_smi, monkeypatch):
    """A process that holds a GPU context of its own when it asks again (the GPU tests' pytest once
    a test used CUDA in it: every later gated run waited its 10 minutes, H200) is not kept waiting
    for itself; another process on the GPU still keeps it waiting, and so does a process the
    monitor lists under this one's pid while this one holds no GPU's device file (a monitor that
    lists host pids in a container)."""
    from kopt.profilers import gpus

    gpu = {"index": 0, "util": 0, "mem": 3400}

    def acquire():
        clock = Clock()
        return gate.acquire(FAST, "cuda", sleep=clock.sleep, clock=clock)

    with open(os.devnull) as held:  # noqa: F841 - as a GPU's device file, held open
        monkeypatch.setattr(gpus, "GPU_FILES", (os.devnull,))
        for pid, idle in ((os.getpid(), True), (os.getpid() + 1, False)):
            fake_smi({"gpus": [gpu], "apps": [[0, pid]]})
            if idle:
                assert acquire()[0]["CUDA_VISIBLE_DEVICES"] == "0"
            else:
                with pytest.raises(gate.GateTimeout, match=r"1 compute process"):
                    acquire()
    monkeypatch.setattr(gpus, "GPU_FILES", ("/dev/no-such-gpu",))
    fake_smi({"gpus": [gpu], "apps": [[0, os.getpid()]]})
    with pytest.raises(gate.GateTimeout, match=r"1 compute process"):
        acquire()


def test_gate_respects_visible_devices(fake_smi, monkeypatch):
    fake_smi(IDLE, IDLE)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    env, _ = gate.acquire(FAST, "cuda", sleep=lambda s: None)
    assert env == {"CUDA_VISIBLE_DEVICES": "1"}


def test_inside_a_slurm_job_the_gate_takes_the_allocated_gpu_and_never_waits_an_hour(fake_smi, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # what SLURM allocated
    fake_smi(IDLE, IDLE)
    env, rec = gate.acquire({"sample_s": 0}, "cuda", sleep=lambda s: None)
    assert env == {"CUDA_VISIBLE_DEVICES": "1"} and rec["slurm_job"] == "42"
    fake_smi(BUSY)  # the allocated GPU is busy: fail after the cluster limit (60 s), not the hour
    clock = Clock()
    with pytest.raises(gate.GateTimeout, match=r"limit 60 s"):
        gate.acquire({"sample_s": 0, "poll_s": 600, "max_wait_s": 3600}, "cuda", sleep=clock.sleep, clock=clock)
    assert clock.t <= 60


def test_gate_passes_without_a_gpu(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gate.acquire(FAST, "auto")[1]["gate"] == "passed"
    assert gate.acquire(FAST, "cpu")[0] == {}


CLAIMER = """
import sys, time
from kopt.loop import gate
env, rec = gate.acquire({"sample_s": 0, "poll_s": 0.2, "max_wait_s": 1, "lock_dir": sys.argv[1]}, "cuda")
print(env["CUDA_VISIBLE_DEVICES"], flush=True)
time.sleep(float(sys.argv[2]))
"""


def test_concurrent_gpu_jobs_never_share_a_gpu_and_a_claim_dies_with_its_job(fake_smi, tmp_path):
    import subprocess

    fake_smi(IDLE)  # both GPUs idle in every reading: only the claims tell the jobs apart
    locks = str(tmp_path / "claims")

    def job(hold: float):
        return subprocess.Popen([sys.executable, "-c", CLAIMER, locks, str(hold)], stdout=subprocess.PIPE, text=True)

    a, b = job(600), job(600)  # held until killed below: a fixed 3 s ran out before c's first check under load
    try:
        got = sorted([a.stdout.readline().strip(), b.stdout.readline().strip()])
        assert got == ["0", "1"]  # two jobs at once: two GPUs
        c = job(0)  # a third while both are held: no GPU within its limit
        assert c.wait(timeout=30) != 0 and c.stdout.read() == ""
    finally:
        for j in (a, b):
            j.kill()
            j.wait()
    d = job(0)  # the claims ended with their jobs
    assert d.stdout.readline().strip() == "0" and d.wait(timeout=30) == 0


def _gpu_overlap():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu_overlap.py"
    spec = importlib.util.spec_from_file_location("gpu_overlap", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def test_the_overlap_check_finds_two_jobs_on_one_gpu_at_once(tmp_path):
    """benchmarks/gpu_overlap.py (the 2-GPU evidence) reads the gate's claim times from provenance."""
    ov = _gpu_overlap()

    def result(path, index, start, end):
        rec = {"gpu_index": index, "gpu_uuid": f"GPU-{index}", "claimed_at": start, "child_ended_at": end}
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(json.dumps({"provenance": {"gate": rec}}))

    result("v0/correctness.json", 0, 100.0, 110.0)
    result("v0/bench.json", 0, 100.0, 110.0)  # the same job: one claim
    result("v1/bench.json", 1, 102.0, 108.0)
    result("v0/profile/profile.json", 0, 110.5, 120.0)
    js = ov.jobs(tmp_path)
    assert [j.label for j in js] == ["v0/bench.json + correctness.json", "v1/bench.json", "v0/profile/profile.json"]
    assert ov.same_gpu_overlaps(js) == [] and ov.busy_together_s(js) == 6.0
    result("v1/profile/profile.json", 1, 107.0, 115.0)  # on GPU 1 before v1's bench ended
    bad = ov.same_gpu_overlaps(ov.jobs(tmp_path))
    assert [(a.label, b.label) for a, b in bad] == [("v1/bench.json", "v1/profile/profile.json")]
    (tmp_path / "command_runs.json").write_text(json.dumps({"provenance": {"gate": {"gpu_uuid": "GPU-0"}}}))
    unchecked = []
    ov.jobs(tmp_path, unchecked)
    assert unchecked == ["command_runs.json"]  # claimed a GPU, but no times to check
