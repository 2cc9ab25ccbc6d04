"""torch.profiler traces recorded on the H100: the kernel's GPU time per call, without the harness's work."""

import pytest

from kopt.profilers import torchtrace
from tests.helpers import FIXTURES

FIX = FIXTURES / "profiles"


def test_torch_trace_leaves_out_the_harness_work():
    trace = torchtrace.load(FIX / "h100_torch_trace_v1_N256.json")
    every = [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]
    assert any("FillFunctor" in e["name"] for e in every)  # poison and L2 flush are in the trace...
    kernels = torchtrace.per_kernel(torchtrace.gpu_events(trace), calls=5)
    assert [k["name"] for k in kernels] == ["softmax_one_pass"]  # ...but not in the kernel's time
    k = kernels[0]
    assert k["calls"] == 1.0 and k["share"] == 1.0
    assert 300 < k["us_per_call"] < 420  # 1 GiB moved at about 3 TB/s
    assert k["registers_per_thread"] == 22 and k["block"] == [32, 1, 1]
    assert torchtrace.gpu_us_per_call(trace, 5) == pytest.approx(k["us_per_call"], rel=0.01)  # median vs mean


def test_torch_trace_counts_work_on_any_stream_outside_prep():
    trace = {
        "traceEvents": [
            {"ph": "X", "cat": "user_annotation", "name": "kopt::prep", "tid": 1, "ts": 0, "dur": 10},
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "tid": 1,
                "ts": 5,
                "dur": 1,
                "args": {"correlation": 1},
            },
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "tid": 1,
                "ts": 20,
                "dur": 1,
                "args": {"correlation": 2},
            },
            {
                "ph": "X",
                "cat": "cuda_runtime",
                "name": "cudaLaunchKernel",
                "tid": 9,
                "ts": 6,
                "dur": 1,
                "args": {"correlation": 3},
            },
            {"ph": "X", "cat": "kernel", "name": "fill", "ts": 30, "dur": 50, "args": {"correlation": 1, "stream": 7}},
            {"ph": "X", "cat": "kernel", "name": "mine", "ts": 90, "dur": 4, "args": {"correlation": 2, "stream": 7}},
            # launched by another thread while the harness was preparing: still the kernel's work
            {
                "ph": "X",
                "cat": "kernel",
                "name": "hidden",
                "ts": 95,
                "dur": 3,
                "args": {"correlation": 3, "stream": 13},
            },
        ]
    }
    assert sorted(e["name"] for e in torchtrace.gpu_events(trace)) == ["hidden", "mine"]
    assert torchtrace.gpu_us_per_call(trace, 1) == 7


def test_gpu_time_is_the_median_over_calls():
    trace = torchtrace.load(FIX / "h100_torch_trace_v1_N256.json")
    per = torchtrace.per_call_us(trace, 5)
    assert len(per) == 5 and all(300 < x < 420 for x in per)
    assert torchtrace.gpu_us_per_call(trace, 5) == pytest.approx(sorted(per)[2])


def test_the_gpu_s_busy_time_in_each_call_is_read_from_the_trace():
    """The recorded trace: one softmax kernel per call, so each call's busy time is its duration."""
    trace = torchtrace.load(FIX / "h100_torch_trace_v1_N256.json")
    busy = torchtrace.call_busy_us(trace)
    assert busy == pytest.approx(torchtrace.per_call_us(trace, 5), abs=1e-3)  # end - start, in float
    assert round(busy[0], 3) == 354.503  # kernel softmax_one_pass, correlation 23


def test_overlapping_work_counts_once_and_work_from_another_thread_not_at_all():
    """A wrapper of two kernels (14-20 and 30-35) and a copy overlapping the first (15-18): busy
    11 us. A kernel launched from another thread is not the call's; a call without launches of
    its own has no busy time to compare."""

    def x(cat, name, ts, dur, tid=1, corr=None):
        return {"ph": "X", "cat": cat, "name": name, "ts": ts, "dur": dur, "tid": tid, "args": {"correlation": corr}}

    trace = {
        "traceEvents": [
            x("user_annotation", torchtrace.PREP, 0, 5),
            x("cuda_runtime", "cudaLaunchKernel", 1, 1, corr=1),
            x("kernel", "spin", 2, 8, tid=7, corr=1),
            x("user_annotation", torchtrace.CALL, 6, 30),
            x("cuda_runtime", "cudaLaunchKernel", 7, 1, corr=2),
            x("kernel", "first", 14, 6, tid=7, corr=2),
            x("cuda_runtime", "cudaMemcpyAsync", 8, 1, corr=3),
            x("gpu_memcpy", "copy", 15, 3, tid=7, corr=3),
            x("cuda_runtime", "cudaLaunchKernel", 28, 1, corr=4),
            x("kernel", "second", 30, 5, tid=7, corr=4),
            x("cuda_runtime", "cudaLaunchKernel", 9, 1, tid=2, corr=5),
            x("kernel", "elsewhere", 40, 5, tid=7, corr=5),
            x("user_annotation", torchtrace.CALL, 50, 10),
            x("cuda_runtime", "cudaLaunchKernel", 52, 1, tid=2, corr=6),
            x("kernel", "from another thread", 55, 5, tid=7, corr=6),
        ]
    }
    assert torchtrace.call_busy_us(trace) == [11.0, None]
