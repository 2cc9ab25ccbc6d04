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


def test_the_gpu_s_wait_for_each_call_is_read_from_the_trace():
    """The recorded trace (no spin then): the first call's kernel started 301.7 us after the
    harness's last GPU work before it (97753.5 against 97369.7 + 82.2 in the trace), the second
    59.2 us; from the third on the launches were ahead of the GPU."""
    trace = torchtrace.load(FIX / "h100_torch_trace_v1_N256.json")
    assert [round(w, 1) for w in torchtrace.call_waits(trace)] == [301.7, 59.2, 3.4, 1.2, 1.6]


def test_the_gaps_between_a_call_s_launches_are_waits_too():
    """A wrapper of two kernels whose second launch came late: 4 us before the first (spin ended
    at 10, first kernel 14-20), 10 us between them (second 30-35); a copy overlapping the first
    kernel adds no wait. Work launched from another thread is not the call's."""

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
        ]
    }
    assert torchtrace.call_waits(trace) == [14.0]
