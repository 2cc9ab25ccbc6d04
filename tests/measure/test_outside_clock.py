"""The clock read outside the kernel's process (kopt.measure.outside_clock): how Nsight Compute's
launches are assigned to the calls the judge ordered, what a kernel that relabels its launches
gets, and the in-process clocks held to the GPU's time. Pure: launches in, figures or faults out.
(The GPU run of the whole clock: tests/gpu/test_gpu_clock.py.)"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from kopt.measure import outside_clock as oc
from kopt.measure.faults import KernelFault
from kopt.profilers import ncu

FIXTURE = Path(__file__).parents[1] / "fixtures" / "profiles" / "h100_ncu_nvtx_classes.csv"


def ledger(configs: dict[str, int], warm: int = 3) -> oc.Ledger:
    """``warm`` warm-up then ``n`` counted calls per config, labelled c<config>-<i>."""
    out = oc.Ledger()
    for key, n in configs.items():
        out.calls += [oc.Call(f"{key}-w{i}", key, False) for i in range(warm)]
        out.calls += [oc.Call(f"{key}-{i}", key, True) for i in range(n)]
    return out


def launches(led: oc.Ledger, per_call: list[float]) -> list[dict]:
    """Every call of ``led`` launching ``per_call`` kernels (their µs), in the order of the calls."""
    return [
        {"process": "1", "kernel": f"k{j}", "label": c.label, "us": us}
        for c in led.calls
        for j, us in enumerate(per_call)
    ]


def test_each_config_gets_the_mean_gpu_time_of_its_counted_calls():
    led = ledger({"a": 4, "b": 6})
    got = oc.per_call(launches(led, [3.0, 1.5]), led)
    assert got["a"]["gpu_us"] == pytest.approx(4.5) and got["a"]["gpu_launches"] == 2
    assert len(got["a"]["calls"]) == 4 and len(got["b"]["calls"]) == 6
    assert got["b"]["gpu_ci_pct"] == 0.0 and got["a"]["gpu_ci_pct"] is None  # fewer than 6 calls: no interval


def test_launches_before_the_first_call_are_not_the_kernels_calls():
    """Import-time work (torch's own start-up, a module-level warm-up) precedes every label."""
    led = ledger({"a": 4})
    early = [{"process": "1", "kernel": "init", "label": None, "us": 900.0}]
    assert oc.per_call(early + launches(led, [2.0]), led)["a"]["gpu_us"] == pytest.approx(2.0)


def test_moving_time_between_counted_calls_leaves_the_mean():
    led = ledger({"a": 4})
    ls = launches(led, [2.0])
    counted = [ln for ln in ls if not ln["label"].startswith("a-w")]
    counted[0]["us"], counted[1]["us"] = 3.9, 0.1  # one call's GPU time given to another
    assert oc.per_call(ls, led)["a"]["gpu_us"] == pytest.approx(2.0)


@pytest.mark.parametrize(
    "attack, words",
    [
        ("unlabelled", "in no call's range"),  # a launch from another thread, another process, or after a pop
        ("forged", "in a range kopt never opened"),
        ("backwards", "labelled as an earlier call"),
        ("into-warm-up", "launched different numbers of kernels"),
        ("into-earlier-call", "launched different numbers of kernels"),
        ("no-launch", "saw no kernel launch"),
        ("no-time", "gave no GPU time"),
    ],
)
def test_launches_relabelled_or_hidden_from_the_calls_are_a_fault(attack, words):
    led = ledger({"a": 4, "b": 4})
    ls = launches(led, [2.0, 1.0])
    first_counted = next(i for i, ln in enumerate(ls) if ln["label"] == "b-0")
    if attack == "unlabelled":
        ls[first_counted]["label"] = None
    elif attack == "forged":
        ls[first_counted]["label"] = "b-99"
    elif attack == "backwards":
        ls[first_counted + 1]["label"] = "a-0"  # after b-0's first launch
    elif attack == "into-warm-up":
        ls[first_counted]["label"] = "b-w2"  # b-0's first launch labelled as the last warm-up
    elif attack == "into-earlier-call":
        nxt = next(i for i, ln in enumerate(ls) if ln["label"] == "b-1")
        ls[nxt]["label"] = "b-0"  # b-1's first launch counted in b-0
    elif attack == "no-launch":
        ls = [ln for ln in ls if not ln["label"].startswith("b")]
    elif attack == "no-time":
        ls[first_counted]["us"] = None
    with pytest.raises(KernelFault, match=words):
        oc.per_call(ls, led)


def clock_csv(rows: list[tuple[str, str | None, str, float]]) -> str:
    """A deciding clock's CSV in the layout Nsight Compute 2025.3.1 writes (the header and the stack
    column copied from the recorded fixture): (process, label, kernel, ns) per launch."""
    lines = FIXTURE.read_text().splitlines()
    header = next(ln for ln in lines if ln.startswith('"ID"'))
    cols = next(csv.reader([header]))
    out = io.StringIO()
    out.write("==PROF== Connected to process 537 (/usr/bin/python3.12)\n" + header + "\n")
    w = csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n")
    for i, (pid, label, kernel, ns) in enumerate(rows):
        stack = f'{pid}  "<default domain>:{ncu.CLOCK_RANGE}{label}:none:none:none:none:none:none" ' if label else ""
        cells = {
            "ID": str(i),
            "Process ID": pid,
            "Kernel Name": kernel,
            "Section Name": "Command line profiler metrics",
        }
        cells.update({ncu.NVTX_COLUMN + ":PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg": stack})
        cells.update({"Metric Name": "gpu__time_duration.sum", "Metric Unit": "nsecond", "Metric Value": f"{ns:,.0f}"})
        w.writerow([cells.get(c, "") for c in cols])
    return out.getvalue()


def test_the_clock_record_is_read_per_launch_with_its_label_and_time():
    text = clock_csv([("537", None, "init", 5000.0), ("537", "ab12", "softmax", 44970.0), ("540", None, "x", 1.0)])
    got = ncu.clock_launches(text)
    assert [g["label"] for g in got] == [None, "ab12", None]
    assert got[1]["us"] == pytest.approx(44.97) and got[1]["kernel"] == "softmax" and got[2]["process"] == "540"


def test_the_clock_reads_the_innermost_kopt_label():
    """A kernel pushing a range of its own inside the call does not hide the call's label; one that
    pushes another kopt label is read by it (and the order rules above judge it)."""
    stack = '7  "<default domain>:kopt-clock aa:none:none:none:none:none:none"  "<default domain>:mine:none:none:none:none:none:none" '
    assert ncu.nvtx_class(stack, ncu.CLOCK_RANGE) == "aa"
    stack += ' "<default domain>:kopt-clock bb:none:none:none:none:none:none" '
    assert ncu.nvtx_class(stack, ncu.CLOCK_RANGE) == "bb"


def test_a_missing_record_is_a_fault(tmp_path):
    with pytest.raises(KernelFault, match="Nsight Compute left no readable record"):
        oc.read_record(tmp_path / "none.csv")
    (tmp_path / "x.csv").write_text("==PROF== nothing profiled\n")
    with pytest.raises(KernelFault, match="no readable record"):
        oc.read_record(tmp_path / "x.csv")


@pytest.mark.parametrize(
    "events, profiler, fault",
    [
        (101.0, 100.2, None),  # honest: the events bracket a little more than the launches
        (96.0, 99.0, None),  # within 5% + 0.5 us (clocks, the flush's tail)
        (90.0, 100.0, "its CUDA events 90.00 us"),  # elapsed_time scaled by 0.9
        (101.0, 80.0, "torch.profiler 80.00 us"),  # the trace rewritten
        (101.0, None, None),  # no profiler figure: nothing to hold
    ],
)
def test_the_in_process_clocks_are_held_to_the_gpu_time(events, profiler, fault):
    rec = {"key": "N=1", "median_us": events, "profiler_us": profiler}
    if fault is None:
        oc.second_clocks(rec, {"gpu_us": 100.0})
        return
    with pytest.raises(KernelFault, match="reported times the GPU did not show: " + fault):
        oc.second_clocks(rec, {"gpu_us": 100.0})
