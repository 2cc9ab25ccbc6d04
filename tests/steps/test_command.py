"""The steps of a command target (kopt.steps.command): the deciding clock from a profiler's trace,
launches told apart by their ranges, and an unreadable CSV."""

from pathlib import Path

from kopt.steps.worktree import make_worktree
from kopt.workspace.command import CommandSpec, Source


def test_the_deciding_clock_without_nvidia_tools_comes_from_rocprofv3s_kernel_trace(repo, tmp_path, monkeypatch):
    """A stand-in rocprofv3 on PATH (no AMD GPU here): it writes the hand-made kernel trace of
    tests/fixtures/profiles (two softmax_one_pass launches of 250 µs) and runs the command."""
    from kopt.steps.command import kernel_gpu_us
    from kopt.workspace.command import CommandSpec
    from tests.helpers import FIXTURES

    tools = tmp_path / "bin"
    tools.mkdir()
    fake = tools / "rocprofv3"
    trace = FIXTURES / "profiles" / "rocprofv3_kernel_trace.csv"
    fake.write_text(
        f'#!/bin/sh\nwhile [ "$1" != "--" ]; do [ "$1" = -d ] && d=$2; shift; done; shift\n'
        f'mkdir -p "$d" && cp {trace} "$d/kopt_kernel_trace.csv" && exec "$@"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:/usr/bin:/bin")
    spec = CommandSpec(
        repo, "python3 bench.py > out.csv", "*.csv", "us_triton", ["seq_len"], None, 0.0, None, "softmax", 1, [], "cuda"
    )
    make_worktree(repo, tmp_path / "wt", Source("HEAD", None, None), None, Path("v0.yaml"))
    ws = type("Ws", (), {"command": spec})()
    settings = {
        "profiler": "auto",  # no ncu on PATH: the stand-in rocprofv3 is the one found
        "rocprofv3": "rocprofv3",
        "timeout_s": 60,
        "gate": {"enabled": False},
        "device": "auto",
    }
    means, note = kernel_gpu_us(
        ws, {"worktree": str(tmp_path / "wt")}, settings, str(tmp_path / "log"), tmp_path / "raw"
    )
    assert means == {"*": 250.0} and note == "rocprofv3: mean GPU time per launch of /softmax/, over all configs"
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert kernel_gpu_us(ws, {"worktree": str(tmp_path / "wt")}, settings, str(tmp_path / "log"), tmp_path / "raw")[
        1
    ].startswith("no Nsight Compute or rocprofv3 here")


def test_launches_are_told_apart_by_their_kopt_class_ranges_and_a_row_takes_the_closest(tmp_path):
    from kopt.steps.command import _bench_row, _launches_by_class
    from tests.helpers import NVTX_PROBE

    csv = tmp_path / "ncu.csv"
    csv.write_text(NVTX_PROBE.read_text().replace(":class N=", ":kopt-class N="))  # the H100 probe's launches
    by = _launches_by_class(csv)
    assert sorted(by) == ["N=2048", "N=256"] and len(by["N=256"]) == 1 and len(by["N=2048"]) == 2
    rec = {"config": {"N": 256}, "key": "N=256,M=4", "class": "N=256", "ok": True, "reason": None}
    rec.update(times_us=[3.0, 5.0], median_us=4.0)
    assert _bench_row(rec, "cuda", "command", {"N=256,M=4": 1.0, "N=256": 2.0, "*": 3.0})["profiler_us"] == 1.0
    assert _bench_row(rec, "cuda", "command", {"N=256": 2.0, "*": 3.0})["profiler_us"] == 2.0
    assert _bench_row(rec, "cuda", "command", {"*": 3.0})["profiler_us"] == 3.0


def test_an_unreadable_csv_fails_the_version_in_one_line(repo, tmp_path):
    from kopt.steps.command import _judged

    spec = CommandSpec(
        repo, "printf '' > out.csv", "*.csv", "us_triton", ["seq_len"], None, 0.0, None, None, 1, [], "cuda"
    )
    make_worktree(repo, tmp_path / "wt", Source("HEAD", None, None), None, Path("v0.yaml"))
    ws = type("Ws", (), {"command": spec})()
    build = {"status": "ok", "worktree": str(tmp_path / "wt")}
    settings = {"timeout_s": 60, "gate": {"enabled": False}, "device": "auto"}
    records, err, _ = _judged(ws, "kernels/v0.yaml", build, settings, str(tmp_path / "log"), 1, tmp_path / "runs")
    assert records == [] and err.startswith("kernels/v0.yaml: the command's CSV is unreadable: ")


def test_no_idle_gpu_is_the_gates_record_and_one_line(repo, tmp_path, monkeypatch):
    """The fold stops the loop on the gate's own record ({"gate": "timeout"}), never on an error's
    text; the line says "gate:" once (it said "gate: gate: no idle GPU ...")."""
    from kopt.loop.gate import GateTimeout
    from kopt.steps import command

    def no_gpu(*a):
        raise GateTimeout("gate: no idle GPU after 3600 s and 7 checks (limit 3600 s): GPU 0: busy")

    monkeypatch.setattr(command, "acquire", no_gpu)
    spec = CommandSpec(repo, "true", "*.csv", "us_triton", ["seq_len"], None, 0.0, None, None, 1, [], "cuda")
    ws = type("Ws", (), {"command": spec})()
    build = {"status": "ok", "worktree": str(tmp_path / "wt")}
    settings = {"timeout_s": 60, "gate": {"enabled": True}, "device": "auto"}
    records, err, gate = command._judged(
        ws, "kernels/v0.yaml", build, settings, str(tmp_path / "log"), 1, tmp_path / "r"
    )
    assert records == [] and err.startswith("gate: no idle GPU after 3600 s") and gate["gate"] == "timeout"


def test_one_mean_over_all_configs_never_stands_for_several_classes():
    """H200, examples/repo_softmax before its bench.py marked its configs: every config of both
    classes got the same 63.68 us (one mean over all launches); the script's column decides instead."""
    from kopt.steps.command import per_class_only

    records = [{"key": "M=1,N=256", "class": "N=256"}, {"key": "M=1,N=4096", "class": "N=4096"}]
    gpu, note = per_class_only({"*": 63.68}, "Nsight Compute: mean GPU time per launch of /_softmax/", records)
    assert gpu == {} and "the script's time column decides" in note and "kopt-class" in note
    ranged = {"M=1,N=256": 44.6, "M=1,N=4096": 63.1}
    assert per_class_only(ranged, "n", records) == (ranged, "n")
    assert per_class_only({"*": 5.0}, "n", records[:1]) == ({"*": 5.0}, "n")  # one class: its own mean
