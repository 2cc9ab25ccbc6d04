"""The clock read outside the kernel's process (kopt.measure.outside_clock): a config's GPU time
from every launch its own process made, what a record that cannot be read gives, and the
in-process clocks held to the GPU's time. Pure: launches in, figures or faults out. (The GPU run
of the whole clock: tests/gpu/test_gpu_clock.py.)"""

from __future__ import annotations

import csv
import io
import statistics
from pathlib import Path

import pytest

from kopt.measure import outside_clock as oc
from kopt.measure.faults import KernelFault
from kopt.profilers import ncu

FIXTURE = Path(__file__).parents[1] / "fixtures" / "profiles" / "h100_ncu_nvtx_classes.csv"


def launch(kernel: str, us: float | None, process: str = "7") -> dict:
    return {"id": 0, "process": process, "kernel": kernel, "us": us}


CALLS = [{"seed": i, "set": i % 2, "wall_us": 100.0 + i} for i in range(4)]


def test_a_configs_gpu_time_is_every_launch_of_its_process_over_its_calls():
    """Import-time work, a first call's extra launches, work labelled or named as anything: all of
    it counts; nothing the kernel's process marks is read."""
    ls = [launch("at-import", 8.0)] + [launch("k", 2.0) for _ in range(4)] + [launch("kopt-anything", 1.0)]
    got = oc.per_config(ls, CALLS, "a")
    assert got["gpu_us"] == pytest.approx((8.0 + 4 * 2.0 + 1.0) / 4)
    assert got["gpu_launches"] == pytest.approx(6 / 4) and got["wall_us"] == pytest.approx(101.5)
    assert got["calls"] == CALLS


def test_the_standard_error_is_the_calls_totals_spread_where_every_call_made_as_many_launches():
    """Two launches a call, totals 10, 12, 14, 16 us: sd 2.58 over sqrt(4); a first call's extra
    launch leaves the calls unequal and no error is claimed."""
    ls = [launch("k", us) for t in (10.0, 12.0, 14.0, 16.0) for us in (t - 3.0, 3.0)]
    got = oc.per_config(ls, CALLS, "a")
    assert got["gpu_us"] == pytest.approx(13.0) and got["gpu_se_us"] == pytest.approx(
        statistics.stdev([10, 12, 14, 16]) / 2
    )
    assert oc.per_config([launch("at-import", 8.0), *ls], CALLS, "a")["gpu_se_us"] is None
    assert oc.per_config([launch("k", 2.0)], CALLS[:1], "a")["gpu_se_us"] is None


@pytest.mark.parametrize(
    "launches, words",
    [
        ([], "saw no kernel launch"),  # work moved into copies, memsets or the host
        ([launch("k", 2.0), launch("helper", 9.0, process="8")], "launches in 2 processes"),
        ([launch("k", None)], "gave no GPU time"),
    ],
)
def test_a_record_a_config_cannot_be_timed_from_is_a_fault(launches, words):
    with pytest.raises(KernelFault, match=words):
        oc.per_config(launches, CALLS, "a")


@pytest.mark.parametrize("name", ["h100_ncu_details_v0.csv", "h100_ncu_details_v1.csv"])
def test_records_ncu_wrote_on_the_h100_are_read_past_its_warnings(name):
    """Recorded with --clock-control none, these begin with ncu's ==WARNING== line (a second review
    found a parser that took it for the CSV's header and would have failed every version)."""
    text = (FIXTURE.parent / name).read_text()
    assert text.startswith("==WARNING==")
    got = ncu.clock_launches(text)
    assert [g["id"] for g in got] == [0, 1, 2] and all(g["us"] and g["us"] > 100 for g in got)


def clock_csv(rows: list[tuple[str, str, str, float]]) -> str:
    """A deciding clock's CSV in the layout Nsight Compute 2025.3.1 writes (the header copied from a
    recorded file): (process, kernel, grid, ns) per launch, ids in order."""
    lines = FIXTURE.read_text().splitlines()
    header = next(ln for ln in lines if ln.startswith('"ID"'))
    cols = next(csv.reader([header]))
    out = io.StringIO()
    out.write("==PROF== Connected to process 537 (/usr/bin/python3.12)\n" + header + "\n")
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for i, (pid, kernel, grid, ns) in enumerate(rows):
        cells = {"ID": str(i), "Process ID": pid, "Kernel Name": kernel, "Grid Size": grid}
        cells.update({"Section Name": "Command line profiler metrics", "Metric Name": "gpu__time_duration.sum"})
        cells.update({"Metric Unit": "nsecond", "Metric Value": f"{ns:,.0f}"})
        w.writerow([cells.get(c, "") for c in cols])
    out.write("==PROF== Disconnected from process 537\n")
    return out.getvalue()


def test_the_clock_record_is_read_per_launch():
    text = clock_csv([("537", "softmax", "(4096, 1, 1)", 44970.0), ("537", "k2", "(123, 1, 1)", 1500.0)])
    got = ncu.clock_launches(text)
    assert [g["id"] for g in got] == [0, 1] and got[0]["us"] == pytest.approx(44.97)
    assert got[1]["kernel"] == "k2" and got[1]["process"] == "537"


@pytest.mark.parametrize(
    "change, words",
    [
        (lambda t: t.replace('"1","537"', '"5","537"'), "do not run 0, 1, 2"),
        (lambda t: t + "==ERROR== Failed to profile kernel k3\n", "reported an error"),
        (lambda t: t + t.splitlines()[-2] + "\n", "two GPU times"),  # launch 1's time written twice
    ],
)
def test_a_record_that_is_not_what_ncu_writes_is_unreadable(tmp_path, change, words):
    text = clock_csv([("537", "a", "(1, 1, 1)", 1.0), ("537", "b", "(1, 1, 1)", 1.0)])
    (tmp_path / "x.csv").write_text(change(text))
    with pytest.raises(KernelFault, match="no readable record.*" + words):
        oc.read_record(tmp_path / "x.csv")
    with pytest.raises(KernelFault, match="Nsight Compute left no readable record"):
        oc.read_record(tmp_path / "none.csv")


@pytest.mark.parametrize(
    "events, profiler, gpu, launches, fault",
    [
        (101.0, 100.2, 100.0, 1, None),  # honest: the events bracket a little more than the launches
        (94.0, 99.0, 100.0, 1, None),  # within 5% + 0.5 us + 2 us a launch (clocks, the flush's tail)
        (90.0, 100.0, 100.0, 1, "its CUDA events 90.00 us"),  # elapsed_time scaled by 0.9
        (101.0, 80.0, 100.0, 1, "torch.profiler 80.00 us"),  # the trace rewritten
        (101.0, None, 100.0, 1, None),  # no profiler figure: nothing to hold
        (3.94, 1.57, 2.96, 1, None),  # the tiny softmax on the H100: ncu reads a short launch 1.4 us long
        (25.0, 20.0, 30.0, 10, None),  # ten short launches a call: 2 us of slack each
        (15.0, 20.0, 40.0, 10, "its CUDA events 15.00 us"),
    ],
)
def test_the_in_process_clocks_are_held_to_the_gpu_time(events, profiler, gpu, launches, fault):
    rec = {"key": "N=1", "median_us": events, "profiler_us": profiler}
    clocked = {"gpu_us": gpu, "gpu_launches": launches}
    if fault is None:
        oc.second_clocks(rec, clocked)
        return
    with pytest.raises(KernelFault, match="reported times the GPU did not show: " + fault):
        oc.second_clocks(rec, clocked)


def test_the_warm_up_launch_is_dropped_and_must_come_first(tmp_path):
    """Each clock process is begun with one launch, before any code of the kernel's is imported
    (Nsight Compute's set-up is paid then, beside the in-process timing); that launch, first by
    position and a fill by name, is not the config's. A record that starts otherwise was launched
    into before the process was ordered to."""
    fill = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int)"
    (tmp_path / "x.csv").write_text(clock_csv([("537", fill, "(1, 1, 1)", 1800.0), ("537", "k", "(8, 1, 1)", 4000.0)]))
    got = oc.read_record(tmp_path / "x.csv")
    assert [g["kernel"] for g in got] == ["k"] and got[0]["us"] == pytest.approx(4.0)
    (tmp_path / "y.csv").write_text(clock_csv([("537", "k", "(8, 1, 1)", 4000.0), ("537", fill, "(1, 1, 1)", 1.0)]))
    with pytest.raises(KernelFault, match="does not start with the clock's warm-up launch"):
        oc.read_record(tmp_path / "y.csv")
    # a process started again after its warm-up failed makes none: every launch is the config's
    assert [g["kernel"] for g in oc.read_record(tmp_path / "y.csv", warmed=False)] == ["k", fill]


def test_the_clock_times_every_launch_and_only_a_trusted_baselines_ranged_calls():
    cmd = ncu.clock_command("ncu", "/x/clock.csv")
    assert "--nvtx" not in cmd and "--kernel-name" not in cmd and cmd[-2:] == ["--log-file", "/x/clock.csv"]
    assert cmd[cmd.index("--metrics") : cmd.index("--metrics") + 2] == ["--metrics", "gpu__time_duration.sum"]
    ranged = ncu.clock_command("ncu", "/x/clock.csv", oc.BASELINE_RANGE)
    assert ranged[ranged.index("--nvtx-include") + 1] == "kopt-clock/"
    # a kernel's cudaProfilerStop hid its launches from these commands (H100, stops_the_profiler.py)
    for c in (cmd, ranged, ncu.timing_command("ncu", "/x/t.csv", "k"), ncu.command("ncu", "/x/p.csv")):
        assert "--disable-profiler-start-stop" in c


def test_a_record_of_the_softmax_example_on_the_h100_decides():
    """The clock's own record of v1 on M=262144, N=256 (docs/runs/h100-clock/): the warm-up fill
    first, then 32 launches of the kernel, 179.9 us each on average (bench.csv's gpu_us)."""
    launches = oc.read_record(FIXTURE.parent / "h100_ncu_clock_softmax_v1_N256.csv")
    assert len(launches) == 32 and {ln["kernel"] for ln in launches} == {"softmax_one_pass"}
    calls = [{"seed": i, "set": i % 8, "wall_us": 8000.0} for i in range(32)]
    got = oc.per_config(launches, calls, "M=262144,N=256,dtype=float32")
    assert got["gpu_us"] == pytest.approx(179.919, abs=0.01) and got["gpu_launches"] == 1.0
    assert got["gpu_se_us"] == pytest.approx(0.1, abs=0.05)  # 0.33% spread over sqrt(32)


def test_where_nsight_compute_decides_a_kernel_gets_no_in_process_trace_and_a_baseline_keeps_it():
    from kopt.measure import child

    opts = {"min_samples": 50, "max_samples": 400, "min_profile_calls": 16}
    kernel, baseline = child._second_clock_opts(opts, False), child._second_clock_opts(opts, True)
    assert kernel["in_process_profiler"] is False and baseline["in_process_profiler"] is True
    assert kernel["max_samples"] == 50 and kernel["check_timed"] is False


@pytest.mark.parametrize(
    "line, timing, fault",
    [
        ("landlock ABI 7: writes only under the scratch folder", "landlock ABI 7: writes only", False),
        ("none: landlock_restrict_self failed (errno 1)", "landlock ABI 7: writes only", True),
        ("landlock ABI 7: writes only ...; NOT the 3 thread(s) already running", "landlock ABI 7", True),
        (None, "landlock ABI 7: writes only", True),
        ("none: this kernel has no Landlock", "none: this kernel has no Landlock", False),
        (
            "landlock ABI 7: ...; unix sockets with a path NOT hidden (a mount namespace: ...)",
            "landlock ABI 7: ...; 2 unix socket path(s) hidden",
            True,
        ),
        (
            "landlock ABI 7: ...; unix sockets with a path NOT hidden (x)",
            "landlock ABI 7: ...; unix sockets with a path NOT hidden (x)",
            False,
        ),
        ("landlock ABI 7: ...; syscall filter on every thread: ...", "landlock ABI 7: ...; ...; no connect, ...", True),
        ("landlock ABI 7: ...; NO syscall filter (EINVAL)", "landlock ABI 7: ...; syscall filter ...", True),
        (
            "landlock ABI 7: ...; capabilities NOT all dropped (...)",
            "landlock ABI 7: ...; every capability dropped",
            True,
        ),
        ("landlock ABI 7: ...; no connect, ...; every capability dropped", "landlock ABI 7: ...; no connect", False),
    ],
)
def test_a_clock_process_confined_less_than_the_timing_process_is_not_read(line, timing, fault):
    """The record of the clock that decides is out of the kernel's reach only while its process is
    confined whole (kopt.inside.confined): one that is not, where the timing process was, is the
    harness's fault, and no figure of it is read."""
    from kopt.measure.faults import HarnessFault

    if fault:
        with pytest.raises(HarnessFault, match="not confined as the timing process was"):
            oc.confined_as_the_timing_process(line, timing, "M=8")
    else:
        oc.confined_as_the_timing_process(line, timing, "M=8")
