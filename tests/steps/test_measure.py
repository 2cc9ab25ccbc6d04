"""Rule `measure` (kopt.steps.measure): the check-then-time child and the profile child start
together; the profile child waits off the device until the first has ended, and runs only for a
version that passed its correctness gate. On the CPU through the Triton interpreter: there, with no
profiler wrapping it, the first child's kernel process runs the profile too (one process, not
three); the two children's path is taken here under a stand-in profiler's command (`env`)."""

import json

import pytest

from kopt.measure.runner import Child, ChildOutcome
from kopt.steps import measure as step
from tests.helpers import BAD
from tests.measure.test_runner import _gone


def _watched(monkeypatch) -> list[dict]:
    """Record every child the step starts: its task, pid, and whether it was given its go."""
    seen: list[dict] = []

    class Watched(Child):
        def __init__(self, task, *a, **kw):
            super().__init__(task, *a, **kw)
            seen.append(
                {"task": task, "pid": self.proc.pid, "held": self.held, "went": False, "wrapper": kw.get("wrapper")}
            )

        def go(self, env):
            next(c for c in seen if c["pid"] == self.proc.pid)["went"] = True
            super().go(env)

    monkeypatch.setattr(step, "Child", Watched)
    return seen


def _measure(tiny, tmp_path, run_params, kernel=None, profiler="auto"):
    out = tmp_path / "out"
    return step.measure(
        out,
        version="v9",
        target=str(tiny / "target.yaml"),
        kernel=str(kernel or tiny / "kernels" / "v0.py"),
        profile_dir=str(out / "profile"),
        asm_dir=str(out / "asm"),
        logs={"check": str(tmp_path / "measure.log"), "profile": str(tmp_path / "profile.log")},
        params=run_params,
        profile_settings={**run_params, "profiler": profiler, "calls": 2},
        hardware_json=None,
        builds=[],
    )


def _under_a_profilers_command(monkeypatch, run_params) -> dict:
    """The profile's backend made Nsight Compute's, its command `env` (which runs the child
    unchanged): the two children's path, as on a GPU. The params to measure with."""
    from kopt.profilers import ncu
    from kopt.steps import profile

    monkeypatch.setattr(profile, "choose_backend", lambda requested, device: "ncu")
    real = profile.shutil.which
    monkeypatch.setattr(profile.shutil, "which", lambda tool: "/usr/bin/ncu" if tool == "ncu" else real(tool))
    monkeypatch.setattr(ncu, "command", lambda tool, csv_path, **kw: ["env", f"KOPT_TOOL_OUT={csv_path}"])
    # the clock that decides finds its ncu through the same shutil.which: on a GPU it would run "/usr/bin/ncu"
    return {**run_params, "bench": {**run_params["bench"], "clock": "in-process"}}


def test_the_profile_child_starts_with_the_first_and_runs_after_it(tiny, tmp_path, run_params, monkeypatch):
    m = _measure(tiny, tmp_path, _under_a_profilers_command(monkeypatch, run_params), profiler="ncu")
    assert m.correctness["status"] == "pass" and (m.bench["status"] == "ok").all()
    assert m.profile["status"] == "ok" and [c["class"] for c in m.profile["classes"]] == ["N=64", "N=512"]
    first = json.loads((tmp_path / "out" / "bench.json").read_text())["provenance"]["child_timeline"]
    second = m.profile["provenance"]["child_timeline"]  # seconds from each child's start: both began at once
    assert [k for k in first if ": " not in k] == ["go", "ready", "correctness", "bench", "end"]  # and configs
    assert [k for k in second if ": " not in k] == ["go", "ready", "class N=64", "class N=512", "metadata", "end"]
    assert second["go"] >= first["end"] - 0.2, (first, second)  # released once the first had ended
    # (what the overlap saves is measured on the GPU, docs/runs/h100-turnaround-30s/, not asserted here)


@pytest.mark.parametrize("wrapped", [True, False])
def test_an_incorrect_version_is_not_profiled_and_its_waiting_child_is_stopped(
    tiny, tmp_path, run_params, monkeypatch, wrapped
):
    seen = _watched(monkeypatch)
    params = _under_a_profilers_command(monkeypatch, run_params) if wrapped else run_params
    m = _measure(tiny, tmp_path, params, BAD / "wrong.py", profiler="ncu" if wrapped else "auto")
    assert m.correctness["status"] == "incorrect" and (m.bench["status"] == "skipped").all()
    assert m.profile["status"] == "skipped" and m.profile["error"].startswith("not profiled: correctness incorrect")
    expected = [("check_then_time", True, True)] + ([("profile", True, False)] if wrapped else [])
    assert [(c["task"], c["held"], c["went"]) for c in seen] == expected
    assert all(_gone(c["pid"]) for c in seen)


@pytest.mark.parametrize("wrapped", [True, False])
def test_no_idle_gpu_fails_the_version_and_stops_both_children(tiny, tmp_path, run_params, monkeypatch, wrapped):
    seen = _watched(monkeypatch)
    params = _under_a_profilers_command(monkeypatch, run_params) if wrapped else run_params
    why = "gate: no idle GPU after 3600 s and 7 checks (limit 3600 s): GPU 0: 1 compute process(es)"
    monkeypatch.setattr(step, "gate_for", lambda params: ChildOutcome("gate", error=why, gate={"gate": "timeout"}))
    m = _measure(tiny, tmp_path, params, profiler="ncu" if wrapped else "auto")
    assert m.correctness["status"] == "failed" and m.correctness["error"].startswith("gate: no idle GPU")
    assert m.profile["status"] == "skipped" and "gate: no idle GPU" in m.profile["error"]
    assert [c["went"] for c in seen] == [False] * (2 if wrapped else 1) and all(_gone(c["pid"]) for c in seen)


def test_on_the_cpu_one_kernel_process_checks_times_and_profiles(tiny, tmp_path, run_params, monkeypatch):
    """No profiler on the CPU: the first child's kernel process times the interpreter again after its
    bench, instead of a profile child and a second kernel process importing torch and triton again."""
    seen = _watched(monkeypatch)
    m = _measure(tiny, tmp_path, run_params)
    assert [(c["task"], c["held"], c["went"]) for c in seen] == [("check_then_time", True, True)]
    assert m.correctness["status"] == "pass" and (m.bench["status"] == "ok").all()
    assert m.profile["status"] == "ok" and m.profile["backend"] == "cpu-interpreter"
    assert [c["class"] for c in m.profile["classes"]] == ["N=64", "N=512"]
    assert all(c["wall_us_per_call"] > 0 and len(c["seeds"]) == 2 for c in m.profile["classes"])  # cpu_samples
    timeline = m.profile["provenance"]["child_timeline"]
    assert [k for k in timeline if ": " not in k] == ["go", "ready", "correctness", "bench", "profile", "end"]
    assert "profile: class N=512" in timeline


def test_on_the_cpu_the_profile_is_the_bench_s_own_calls(tiny, tmp_path, run_params):
    """The CPU's profile makes no call of its own: each class's figures are its largest config's
    timed calls in the bench (the same seeds, their mean), so the interpreter runs no extra calls."""
    import pandas as pd

    m = _measure(tiny, tmp_path, run_params)
    samples = pd.read_csv(tmp_path / "out" / "bench_samples.csv")
    for c in m.profile["classes"]:
        mine = samples[samples["config_key"] == c["key"]]
        assert c["seeds"] == mine["seed"].tolist() and len(c["seeds"]) == run_params["bench"]["cpu_samples"]
        assert c["wall_us_per_call"] == pytest.approx(mine["us"].mean(), rel=1e-3)


def test_the_profile_child_runs_under_the_profilers_command(tiny, tmp_path, run_params, monkeypatch):
    """As under Nsight Compute: the profile child is started held under the tool's command prefix
    (here `env`, which runs it unchanged), and its figures are the tool's."""
    seen = _watched(monkeypatch)
    m = _measure(tiny, tmp_path, _under_a_profilers_command(monkeypatch, run_params), profiler="ncu")
    assert [(c["task"], c["wrapper"]) for c in seen] == [
        ("check_then_time", None),
        ("profile", ["env", f"KOPT_TOOL_OUT={tmp_path / 'out' / 'profile' / 'raw' / 'ncu_details.csv'}"]),
    ]
    assert m.profile["status"] == "ok"
    if m.profile["device"] == "cpu":  # the interpreter's wall time: no counters
        assert m.profile["backend"] == "cpu-interpreter"
    else:  # `env` wrote no Nsight Compute CSV: torch.profiler's figures, and the note says why
        assert m.profile["backend"] == "torch" and "Nsight Compute output unreadable" in m.profile["tool_note"]
