"""The measured ceilings (kopt.measure.ceilings): copy bandwidth and matmul rates, every run timed
through kopt.measure.timing.event_time_us. On the CPU."""

from kopt.measure import ceilings
from tests.helpers import _counting


def test_ceilings_time_every_run_through_event_time_us(monkeypatch):
    calls = _counting(monkeypatch, ceilings)
    res = ceilings.measure_ceilings("cpu", runs=3)
    assert set(res) == {"device", "runs", "timing", "copy", "copy_methods", "matmul"} and res["timing"] == "wall time"
    assert set(res["copy_methods"]) == {"memcpy", "elementwise"} and res["copy"]["best_of"] == ["elementwise", "memcpy"]
    for m in res["copy_methods"].values():
        assert m["gbps"] > 0 and len(m["samples_gbps"]) == 3 and all(g > 0 for g in m["samples_gbps"])
    assert list(res["matmul"]) == ["fp32", "tf32", "bf16", "fp16", "fp8"]
    assert res["matmul"]["fp32"]["tflops"] > 0 and len(res["matmul"]["fp32"]["samples_tflops"]) == 3
    assert all(res["matmul"][k] == {"tflops": None, "note": "not measured on the CPU"} for k in ("tf32", "fp16", "fp8"))
    timed = 2 + sum("samples_tflops" in m for m in res["matmul"].values())  # two copies, fp32 and bf16
    assert len(calls) == 3 * timed
    assert all(c["device"] == "cpu" and c["spin_cycles"] == 0 and c.get("lab") is None for c in calls)


def test_with_a_lab_each_ceiling_run_is_timed_as_a_kernel_call(monkeypatch):
    """On a GPU, measure_ceilings passes a Lab (L2 flush) and the spin to every timed run, as the
    kernels' calls are timed; back to back (flushed=False) neither."""
    calls = _counting(monkeypatch, ceilings)
    lab = object()  # event_time_us on the CPU ignores caches and spin: only what is passed counts
    ceilings._timed_seconds(lambda: None, "cpu", 2, lab)
    ceilings._timed_seconds(lambda: None, "cpu", 2, None)
    assert [(c["lab"], c["spin_cycles"] > 0) for c in calls] == [(lab, True)] * 2 + [(None, False)] * 2
