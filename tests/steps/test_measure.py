"""Rule `measure` (kopt.steps.measure): one child checks, then times, behind the GPU gate; rule
`profile` (kopt.steps.profile.profile_version) follows the decision, for a version that passed its
gate. On the CPU through the Triton interpreter: there, with no profiler wrapping it, the check's
kernel process profiles too (one process, not three) and rule `profile` writes that record; a
profile child's path is taken here under a stand-in profiler's command (`env`)."""

import json

import pytest

from kopt.measure import runner
from kopt.measure.runner import Child, ChildOutcome
from kopt.steps import measure as step
from kopt.steps.profile import profile_version
from tests.helpers import BAD
from tests.measure.test_runner import _gone


def _watched(monkeypatch) -> list[dict]:
    """Record every child either step starts: its task, pid, and whether it was given its go."""
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
    monkeypatch.setattr(runner, "Child", Watched)
    return seen


def _measure(tiny, tmp_path, run_params, kernel=None, profiler="auto"):
    """Rule `measure`, then rule `profile`, as the graph runs them: (measured, profile.json's doc)."""
    out = tmp_path / "out"
    kernel = str(kernel or tiny / "kernels" / "v0.py")
    settings = {**run_params, "profiler": profiler, "calls": 2}
    files = {"version": "v9", "target": str(tiny / "target.yaml"), "kernel": kernel, "builds": []}
    m = step.measure(
        out,
        **files,
        log=str(tmp_path / "measure.log"),
        params=run_params,
        profile_settings=settings,
        hardware_json=None,
    )
    profile = profile_version(
        **files,
        correctness_json=str(out / "correctness.json"),
        bench_json=str(out / "bench.json"),
        out_dir=str(out / "profile"),
        asm_dir=str(out / "asm"),
        log=str(tmp_path / "profile.log"),
        settings=settings,
    )
    return m, profile


def _under_a_profilers_command(monkeypatch, run_params) -> dict:
    """The profile's backend made Nsight Compute's, its command `env` (which runs the child
    unchanged): a profile child's path, as on a GPU. The params to measure with."""
    from kopt.profilers import ncu
    from kopt.steps import profile

    monkeypatch.setattr(profile, "choose_backend", lambda requested, device: "ncu")
    real = profile.shutil.which
    monkeypatch.setattr(profile.shutil, "which", lambda tool: "/usr/bin/ncu" if tool == "ncu" else real(tool))
    monkeypatch.setattr(ncu, "command", lambda tool, csv_path, **kw: ["env", f"KOPT_TOOL_OUT={csv_path}"])
    # the clock that decides finds its ncu through the same shutil.which: on a GPU it would run "/usr/bin/ncu"
    return {**run_params, "bench": {**run_params["bench"], "clock": "in-process"}}


def _fallback(seen: list[dict], profile: dict) -> list[dict]:
    """The children started, less the torch.profiler child that follows one under `env` on a GPU
    (no Nsight Compute CSV: kopt.steps.profile._profiled), which the profile's note names."""
    if profile.get("device") == "cuda":
        assert "torch.profiler figures instead" in profile["tool_note"]
        assert [(c["task"], c["wrapper"]) for c in seen[2:]] == [("profile", None)]
        return seen[:2]
    return seen


def test_the_profile_child_starts_after_the_check_has_ended(tiny, tmp_path, run_params, monkeypatch):
    """The decision waits for no profile: the check's child alone in rule `measure`; the profile's
    child starts in rule `profile`, under the profiler's command."""
    seen = _watched(monkeypatch)
    m, profile = _measure(tiny, tmp_path, _under_a_profilers_command(monkeypatch, run_params), profiler="ncu")
    assert m.correctness["status"] == "pass"
    assert profile["status"] == "ok" and [c["class"] for c in profile["classes"]] == ["N=64", "N=512"]
    assert [(c["task"], c["held"], c["went"]) for c in seen] == [
        ("check_then_time", True, True),
        ("profile", False, False),
    ]
    assert json.loads((tmp_path / "out" / "bench.json").read_text()).get("cpu_profile") is None
    assert all(_gone(c["pid"]) for c in seen)


@pytest.mark.parametrize("wrapped", [True, False])
def test_an_incorrect_version_is_not_profiled(tiny, tmp_path, run_params, monkeypatch, wrapped):
    seen = _watched(monkeypatch)
    params = _under_a_profilers_command(monkeypatch, run_params) if wrapped else run_params
    m, profile = _measure(tiny, tmp_path, params, BAD / "wrong.py", profiler="ncu" if wrapped else "auto")
    assert m.correctness["status"] == "incorrect" and (m.bench["status"] == "skipped").all()
    assert profile["status"] == "skipped" and profile["error"].startswith("not profiled: correctness incorrect")
    assert [(c["task"], c["held"], c["went"]) for c in seen] == [("check_then_time", True, True)]
    assert all(_gone(c["pid"]) for c in seen)


@pytest.mark.parametrize("wrapped", [True, False])
def test_no_idle_gpu_fails_the_version_and_stops_its_child(tiny, tmp_path, run_params, monkeypatch, wrapped):
    seen = _watched(monkeypatch)
    params = _under_a_profilers_command(monkeypatch, run_params) if wrapped else run_params
    why = "gate: no idle GPU after 3600 s and 7 checks (limit 3600 s): GPU 0: 1 compute process(es)"
    monkeypatch.setattr(step, "gate_for", lambda params: ChildOutcome("gate", error=why, gate={"gate": "timeout"}))
    m, profile = _measure(tiny, tmp_path, params, profiler="ncu" if wrapped else "auto")
    assert m.correctness["status"] == "failed" and m.correctness["error"].startswith("gate: no idle GPU")
    assert m.correctness["provenance"]["gate"] == {"gate": "timeout"}  # what the fold reads, never the text
    assert profile["status"] == "skipped" and "gate: no idle GPU" in profile["error"]
    assert [c["went"] for c in seen] == [False] and all(_gone(c["pid"]) for c in seen)


def test_on_the_cpu_one_kernel_process_checks_times_and_profiles(tiny, tmp_path, run_params, monkeypatch):
    """No profiler on the CPU: the check's kernel process profiles after its bench, from the bench's
    own calls, instead of a profile child and a second kernel process importing torch and triton again;
    rule `profile` writes the record bench.json kept. (`device: cpu`: the same on a GPU machine.)"""
    seen = _watched(monkeypatch)
    m, profile = _measure(tiny, tmp_path, {**run_params, "device": "cpu"})
    assert [(c["task"], c["held"], c["went"]) for c in seen] == [("check_then_time", True, True)]
    assert m.correctness["status"] == "pass" and (m.bench["status"] == "ok").all()
    assert profile["status"] == "ok" and profile["backend"] == "cpu-interpreter"
    assert [c["class"] for c in profile["classes"]] == ["N=64", "N=512"]
    assert all(c["wall_us_per_call"] > 0 and len(c["seeds"]) == 2 for c in profile["classes"])  # cpu_samples
    timeline = profile["provenance"]["child_timeline"]
    assert [k for k in timeline if ": " not in k] == ["go", "ready", "correctness", "bench", "profile", "end"]
    assert "profile: class N=512" in timeline
    assert "profiled in the check's kernel process" in (tmp_path / "profile.log").read_text()


def test_on_the_cpu_the_profile_is_the_bench_s_own_calls(tiny, tmp_path, run_params):
    """The CPU's profile makes no call of its own: each class's figures are its largest config's
    timed calls in the bench (the same seeds, their mean), so the interpreter runs no extra calls."""
    import pandas as pd

    _, profile = _measure(tiny, tmp_path, {**run_params, "device": "cpu"})
    samples = pd.read_csv(tmp_path / "out" / "bench_samples.csv")
    for c in profile["classes"]:
        mine = samples[samples["config_key"] == c["key"]]
        assert c["seeds"] == mine["seed"].tolist() and len(c["seeds"]) == run_params["bench"]["cpu_samples"]
        assert c["wall_us_per_call"] == pytest.approx(mine["us"].mean(), rel=1e-3)


def test_the_profile_child_runs_under_the_profilers_command(tiny, tmp_path, run_params, monkeypatch):
    """As under Nsight Compute: the profile child is started under the tool's command prefix (here
    `env`, which runs it unchanged), and its figures are the tool's."""
    seen = _watched(monkeypatch)
    _, profile = _measure(tiny, tmp_path, _under_a_profilers_command(monkeypatch, run_params), profiler="ncu")
    assert [(c["task"], c["wrapper"]) for c in _fallback(seen, profile)] == [
        ("check_then_time", None),
        ("profile", ["env", f"KOPT_TOOL_OUT={tmp_path / 'out' / 'profile' / 'raw' / 'ncu_details.csv'}"]),
    ]
    assert profile["status"] == "ok"
    if profile["device"] == "cpu":  # the interpreter's wall time: no counters
        assert profile["backend"] == "cpu-interpreter"
    else:  # `env` wrote no Nsight Compute CSV: torch.profiler's figures, and the note says why
        assert profile["backend"] == "torch" and "Nsight Compute output unreadable" in profile["tool_note"]
