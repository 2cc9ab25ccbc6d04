"""The clock read outside the kernel's process (kopt.measure.outside_clock): how Nsight Compute's
launches are cut into the calls the judge ordered by its markers, what a kernel that moves,
hides or relabels its launches gets, and the in-process clocks held to the GPU's time. Pure:
launches in, figures or faults out. (The GPU run of the whole clock: tests/gpu/test_gpu_clock.py.)"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from kopt.measure import outside_clock as oc
from kopt.measure.faults import KernelFault
from kopt.profilers import ncu

FIXTURE = Path(__file__).parents[1] / "fixtures" / "profiles" / "h100_ncu_nvtx_classes.csv"


def ledger(configs: dict[str, int]) -> oc.Ledger:
    """``n`` calls per config, their markers' grids 1000, 1001, ..."""
    out = oc.Ledger()
    for key, n in configs.items():
        out.calls += [oc.Call(key, 1000 + len(out.calls) + i) for i in range(n)]
    return out


def launch(kernel: str, us: float | None, grid: int = 64, process: str = "7") -> dict:
    return {"process": process, "kernel": kernel, "grid": f"({grid}, 1, 1)", "us": us}


def record(led: oc.Ledger, per_call: dict[str, list[float]]) -> list[dict]:
    """What ncu records when each call launches its config's kernels, then its marker."""
    out = []
    for c in led.calls:
        out += [launch(f"k{j}", us) for j, us in enumerate(per_call[c.key])]
        out.append(launch(oc.MARKER, 1.0, c.grid))
    return out


def test_each_config_gets_the_gpu_time_of_its_calls_windows():
    led = ledger({"a": 4, "b": 6})
    got = oc.per_config(record(led, {"a": [3.0, 1.5], "b": [10.0]}), led)
    assert got["a"]["gpu_us"] == pytest.approx(4.5) and got["a"]["gpu_launches"] == 2
    assert got["b"]["gpu_us"] == pytest.approx(10.0) and len(got["b"]["calls"]) == 6
    assert got["b"]["gpu_ci_pct"] == 0.0 and got["a"]["gpu_ci_pct"] is None  # fewer than 6 calls: no interval


def test_launches_before_the_first_call_are_the_first_calls():
    """Nothing is left out: work at import lands in the first window."""
    led = ledger({"a": 4})
    got = oc.per_config([launch("at-import", 8.0), *record(led, {"a": [2.0]})], led)
    assert got["a"]["gpu_us"] == pytest.approx(4.0)  # (8 + 4 * 2) / 4


def test_markers_launched_late_move_work_between_calls_but_not_out_of_a_config():
    """The kernel launches each marker after the next call's work: every window holds the next
    call's work, the first window two calls', the last its own dummy. The config's total stands."""
    led = ledger({"a": 4})
    late = [launch("k", 2.0)]
    for c in led.calls[1:]:
        late += [launch("k", 2.0), launch(oc.MARKER, 1.0, led.calls[led.calls.index(c) - 1].grid)]
    late += [launch("dummy", 0.001), launch(oc.MARKER, 1.0, led.calls[-1].grid)]
    got = oc.per_config(late, led)
    assert got["a"]["gpu_us"] == pytest.approx((4 * 2.0 + 0.001) / 4)
    assert [c["us"] for c in got["a"]["calls"]] == [4.0, 2.0, 2.0, 0.001]


def test_work_moved_into_a_smaller_configs_calls_makes_it_slower_by_more():
    """Across configs a late marker can only move the later (larger) config's work into the earlier
    (smaller) one's windows, which run first: the smaller config's ratio grows more than the larger's
    shrinks, so the class's geometric mean gets worse."""
    led = ledger({"small": 2, "large": 2})
    honest = oc.per_config(record(led, {"small": [10.0], "large": [100.0]}), led)
    g = {c.key: [] for c in led.calls}
    for c in led.calls:
        g[c.key].append(c.grid)
    moved = [launch("k", 10.0), launch(oc.MARKER, 1, g["small"][0]), launch("k", 10.0)]
    moved += [launch("k", 50.0), launch(oc.MARKER, 1, g["small"][1])]  # half of large's first call
    moved += [
        launch("k", 50.0),
        launch(oc.MARKER, 1, g["large"][0]),
        launch("k", 100.0),
        launch(oc.MARKER, 1, g["large"][1]),
    ]
    got = oc.per_config(moved, led)
    ratio = (got["small"]["gpu_us"] / honest["small"]["gpu_us"]) * (got["large"]["gpu_us"] / honest["large"]["gpu_us"])
    assert got["large"]["gpu_us"] < honest["large"]["gpu_us"] and ratio > 1.0


def test_configs_run_smallest_first_by_the_references_bytes():
    class Ref:
        @staticmethod
        def bytes_moved(M, N):
            return M * N * 8

    items = [
        {"key": k, "config": {"M": m, "N": n}} for k, m, n in [("big", 64, 4096), ("tiny", 4, 64), ("mid", 64, 256)]
    ]
    assert [it["key"] for it in oc.smallest_first(Ref, items)] == ["tiny", "mid", "big"]
    assert [it["key"] for it in oc.smallest_first(object(), items)] == ["tiny", "mid", "big"]  # element counts


@pytest.mark.parametrize(
    "attack, words",
    [
        ("missing-marker", "out of order, twice or not at all"),
        ("marker-twice", "out of order, twice or not at all"),
        ("markers-swapped", "out of order, twice or not at all"),
        ("other-process", "in another process"),
        ("no-launch", "saw no kernel launch"),
        ("no-time", "gave no GPU time"),
    ],
)
def test_a_record_the_calls_cannot_be_read_from_is_a_fault(attack, words):
    led = ledger({"a": 4, "b": 4})
    ls = record(led, {"a": [2.0, 1.0], "b": [3.0]})
    marks = [i for i, ln in enumerate(ls) if ln["kernel"] == oc.MARKER]
    if attack == "missing-marker":
        del ls[marks[5]]
    elif attack == "marker-twice":
        ls.insert(marks[6], dict(ls[marks[5]]))
    elif attack == "markers-swapped":
        ls[marks[2]], ls[marks[3]] = ls[marks[3]], ls[marks[2]]
    elif attack == "other-process":
        ls.insert(marks[4], launch("helper", 9.0, process="8"))  # work made in a process of its own
    elif attack == "no-launch":
        ls = [ln for ln in ls if ln["kernel"] == oc.MARKER]
    elif attack == "no-time":
        ls[0]["us"] = None
    with pytest.raises(KernelFault, match=words):
        oc.per_config(ls, led)


def test_a_marker_named_kernel_of_the_kernels_own_counts_as_work():
    led = ledger({"a": 2})
    ls = record(led, {"a": [2.0]})
    ls.insert(0, launch(oc.MARKER, 5.0, grid=7))  # not a grid the judge drew
    assert oc.per_config(ls, led)["a"]["gpu_us"] == pytest.approx(4.5)


def test_a_baselines_warm_up_is_left_out():
    led = oc.Ledger([oc.Call("a", 1, counted=False), oc.Call("a", 2), oc.Call("a", 3)])
    ls = [launch("autotune", 500.0), launch(oc.MARKER, 1, 1), launch("k", 2.0), launch(oc.MARKER, 1, 2)]
    ls += [launch("k", 2.0), launch(oc.MARKER, 1, 3)]
    assert oc.per_config(ls, led)["a"]["gpu_us"] == pytest.approx(2.0)


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
    text = clock_csv([("537", "softmax", "(4096, 1, 1)", 44970.0), ("537", oc.MARKER, "(123, 1, 1)", 1500.0)])
    got = ncu.clock_launches(text)
    assert [g["id"] for g in got] == [0, 1] and got[0]["us"] == pytest.approx(44.97)
    assert got[1]["kernel"] == oc.MARKER and oc._grid(got[1]["grid"]) == 123 and got[1]["process"] == "537"


def test_a_record_whose_ids_do_not_run_in_order_is_unreadable(tmp_path):
    text = clock_csv([("537", "a", "(1, 1, 1)", 1.0), ("537", "b", "(1, 1, 1)", 1.0)]).replace('"1","537"', '"5","537"')
    (tmp_path / "x.csv").write_text(text)
    with pytest.raises(KernelFault, match="no readable record.*do not run 0, 1, 2"):
        oc.read_record(tmp_path / "x.csv")
    with pytest.raises(KernelFault, match="Nsight Compute left no readable record"):
        oc.read_record(tmp_path / "none.csv")


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
