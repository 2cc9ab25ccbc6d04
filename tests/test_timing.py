"""The one timed iteration (kopt.measure.timing.event_time_us): the kernel's benchmark calls and
the measured ceilings are all timed through it. On the CPU, where it is wall time in µs."""

import time
from pathlib import Path

import torch

from kopt.measure import ceilings, timing
from kopt.measure.device import Guard
from kopt.measure.variants import load_reference

ROOT = Path(__file__).resolve().parents[1]


def _counting(monkeypatch, module) -> list[dict]:
    """Replace ``module.event_time_us`` by a wrapper of the real one that records each call."""
    calls: list[dict] = []
    real = timing.event_time_us

    def counted(fn, device, **kw):
        calls.append({"device": device, **kw})
        return real(fn, device, **kw)

    monkeypatch.setattr(module, "event_time_us", counted)
    return calls


class _NoCaches:
    def clear_caches(self):
        raise AssertionError("no cache to clear on the CPU")


def test_event_time_us_on_the_cpu_is_the_calls_wall_time_in_us():
    def call():
        time.sleep(0.002)
        return "ret"

    t = timing.event_time_us(call, "cpu", caches=_NoCaches(), spin=True)
    assert t.ret == "ret"
    assert t.us == t.host_us
    assert 2000 <= t.us < 2e6  # µs, not seconds or ms


def test_ceilings_time_every_run_through_event_time_us(monkeypatch):
    calls = _counting(monkeypatch, ceilings)
    res = ceilings.measure_ceilings("cpu", runs=3)
    assert set(res) == {"device", "runs", "copy", "copy_methods", "matmul"}
    assert set(res["copy_methods"]) == {"memcpy", "elementwise"} and res["copy"]["best_of"] == ["elementwise", "memcpy"]
    for m in res["copy_methods"].values():
        assert m["gbps"] > 0 and len(m["samples_gbps"]) == 3 and all(g > 0 for g in m["samples_gbps"])
    assert list(res["matmul"]) == ["fp32", "tf32", "bf16", "fp16", "fp8"]
    assert res["matmul"]["fp32"]["tflops"] > 0 and len(res["matmul"]["fp32"]["samples_tflops"]) == 3
    assert all(res["matmul"][k] == {"tflops": None, "note": "not measured on the CPU"} for k in ("tf32", "fp16", "fp8"))
    timed = 2 + sum("samples_tflops" in m for m in res["matmul"].values())  # two copies, fp32 and bf16
    assert len(calls) == 3 * timed
    assert all(c["device"] == "cpu" and c["spin"] is False and c.get("caches") is None for c in calls)


def _softmax(x, y):
    y.copy_(torch.softmax(x, dim=-1))


def test_benchmark_calls_are_timed_through_event_time_us(monkeypatch):
    calls = _counting(monkeypatch, timing)
    ref = load_reference(ROOT / "examples" / "softmax" / "ref.py")
    item = {"key": "M=4,N=64", "config": {"M": 4, "N": 64}, "class": "N=64", "tol": {"atol": 1e-6, "rtol": 1e-5}}
    opts = {"cpu_warmup": 2, "cpu_samples": 3, "seed": 1}
    rec = timing.bench_config(ref, _softmax, item, device="cpu", opts=opts, guard=Guard())
    assert len(calls) == 2 + 3  # the warm-up calls and the samples
    assert all(c["device"] == "cpu" and isinstance(c["caches"], timing.Lab) for c in calls)
    assert rec["method"] == "cpu-interpreter" and rec["n_samples"] == 3 and len(rec["samples"]) == 3
    assert rec["median_us"] > 0 and all(s["us"] > 0 for s in rec["samples"])
    assert rec["p20_us"] <= rec["median_us"] <= rec["p80_us"]


def test_median_interval_narrows_with_samples_and_widens_with_spread():
    import random

    r = random.Random(0)
    tight = [100 * (1 + r.gauss(0, 0.003)) for _ in range(400)]
    assert timing.median_ci_pct(tight[:56]) > timing.median_ci_pct(tight) > 0
    wide = [100 * (1 + r.gauss(0, 0.05)) for _ in range(56)]
    assert timing.median_ci_pct(wide) > 10 * timing.median_ci_pct(tight[:56])
    assert timing.median_ci_pct([1.0] * 5) == float("inf")  # too few to say


def _fake_gpu_sampling(monkeypatch, spread: float) -> list[int]:
    """_samples with timed calls replaced by draws of a given spread (no GPU needed)."""
    import random
    from types import SimpleNamespace

    r, taken = random.Random(1), []

    def timed_call(trial, lab, *, where, on_enqueued=None, **kw):
        taken.append(where)
        return timing.Sample(100 * (1 + r.gauss(0, spread)), 0, 0, 1.0)

    monkeypatch.setattr(timing, "timed_call", timed_call)
    monkeypatch.setattr(timing, "whole_cycles", lambda trial, n: n)
    monkeypatch.setattr(timing, "_bus_id", lambda: None)
    lab = SimpleNamespace(device="cuda")
    opts = {"min_samples": 50, "target_ci_pct": 0.25}
    return len(timing._samples(None, lab, 400, "k", [], opts)), len(timing._samples(None, lab, 400, "k", [], {**opts, "target_ci_pct": 0}))


def test_sampling_stops_once_the_median_is_pinned_down(monkeypatch):
    stable, always = _fake_gpu_sampling(monkeypatch, 0.003)
    assert stable == 50 and always == 400  # 0.3% spread: min_samples pin the median within 0.25%
    noisy, _ = _fake_gpu_sampling(monkeypatch, 0.05)
    assert 50 < noisy <= 400  # 5% spread: more samples, up to the cap
