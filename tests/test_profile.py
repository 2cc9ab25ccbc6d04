"""The profile stage: parsers on real H100 outputs, classification on the threshold edges,
roofline arithmetic, the hardware registry, and decisions on the profiler's GPU time."""

from pathlib import Path

import pytest

from kopt.analysis import bottleneck as bn
from kopt.analysis import registry as hw
from kopt.analysis.roofline import point
from kopt.loop import decide as dec
from kopt.profilers import ncu, rocprof, torchtrace

FIX = Path(__file__).parent / "fixtures" / "profiles"
ROOT = Path(__file__).resolve().parents[1]


# --- Nsight Compute (recorded on the H100) ---------------------------------------------------


def test_ncu_details_v1_one_launch_per_class():
    launches = ncu.parse((FIX / "h100_ncu_details_v1.csv").read_text())
    assert [ln["kernel"] for ln in launches] == ["softmax_one_pass"] * 3
    first = launches[0]  # N=256, M=524288: the class's largest config
    assert first["grid"] == "(524288, 1, 1)" and first["threads_per_block"] == 32
    assert first["memory_throughput_pct"] == pytest.approx(89.41)
    assert first["sm_throughput_pct"] == pytest.approx(22.31)
    assert first["registers_per_thread"] == 22
    assert first["theoretical_occupancy_pct"] == 50 and first["occupancy_limiter"] == "blocks"
    assert first["waves_per_sm"] > 100
    assert first["duration_us"] == pytest.approx(351.488)
    # DRAM bytes: a row read and written once = 2 * M * N * 4 bytes, within a few %
    assert first["dram_bytes"] == pytest.approx(2 * 524288 * 256 * 4, rel=0.05)
    assert first["warp_stalls_top"][0]["reason"] == "long_scoreboard"
    assert {"SOLBottleneck", "TheoreticalOccupancy"} <= {r["rule"] for r in first["rules"]}


def test_ncu_v1_is_memory_bound_and_v0_short_rows_balanced():
    for ln in ncu.parse((FIX / "h100_ncu_details_v1.csv").read_text()):
        v = bn.classify_counters(sm_pct=ln["sm_throughput_pct"], mem_pct=ln["memory_throughput_pct"])
        assert v["class"] == "memory-bound" and v["evidence"] == "counters"
    v0 = ncu.parse((FIX / "h100_ncu_details_v0.csv").read_text())[0]
    v = bn.classify_counters(sm_pct=v0["sm_throughput_pct"], mem_pct=v0["memory_throughput_pct"])
    assert v["class"] in {"memory-bound", "compute-bound"} and "balanced" in v["why"]


def test_ncu_rejects_output_without_csv():
    with pytest.raises(ValueError, match="no CSV rows"):
        ncu.parse_details("==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM\n")
    assert ncu.number("1,215,000,000.00") == 1215000000.0 and ncu.number("n/a") is None


def test_ncu_command_selects_by_nvtx_and_name():
    cmd = ncu.command("ncu", "out.csv", "softmax_one_pass")
    assert "--clock-control" in cmd and cmd[cmd.index("--clock-control") + 1] == "none"
    assert cmd[cmd.index("--nvtx-include") + 1] == "kopt-profile/"
    assert cmd[-1] == "regex:softmax_one_pass"
    assert all(s in cmd for s in ncu.SECTIONS)


# --- torch.profiler (recorded on the H100) ---------------------------------------------------


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
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 5, "dur": 1, "args": {"correlation": 1}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 20, "dur": 1, "args": {"correlation": 2}},
            {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 9, "ts": 6, "dur": 1, "args": {"correlation": 3}},
            {"ph": "X", "cat": "kernel", "name": "fill", "ts": 30, "dur": 50, "args": {"correlation": 1, "stream": 7}},
            {"ph": "X", "cat": "kernel", "name": "mine", "ts": 90, "dur": 4, "args": {"correlation": 2, "stream": 7}},
            # launched by another thread while the harness was preparing: still the kernel's work
            {"ph": "X", "cat": "kernel", "name": "hidden", "ts": 95, "dur": 3, "args": {"correlation": 3, "stream": 13}},
        ]
    }
    assert sorted(e["name"] for e in torchtrace.gpu_events(trace)) == ["hidden", "mine"]
    assert torchtrace.gpu_us_per_call(trace, 1) == 7


# --- rocprofv3 (fixture written from the documented columns) ---------------------------------


def test_rocprof_kernel_trace():
    ks = rocprof.parse_kernel_trace((FIX / "rocprofv3_kernel_trace.csv").read_text())
    assert ks[0]["name"] == "softmax_one_pass" and ks[0]["launches"] == 2
    assert ks[0]["mean_us"] == pytest.approx(250.0) and ks[0]["vgpr"] == 32 and ks[0]["sgpr"] == 16
    assert ks[0]["workgroup"] == [64, 1, 1] and ks[0]["share"] == pytest.approx(500 / 510)
    with pytest.raises(ValueError):
        rocprof.parse_kernel_trace('"a","b"\n1,2\n')


# --- classification on the edges --------------------------------------------------------------

EDGES = [
    # sm, mem, theoretical occupancy, limiter, waves -> class
    (0.0, 80.0, None, None, None, "memory-bound"),  # 80% bounds
    (20.0, 79.9, None, None, None, "memory-bound"),  # >= 60 and 10 points ahead
    (70.0, 79.9, None, None, None, "memory-bound"),  # neither 10 ahead, both >= 60: balanced, higher
    (80.0, 50.0, None, None, None, "compute-bound"),
    (60.0, 50.0, None, None, None, "compute-bound"),  # exactly 10 points ahead
    (59.9, 50.0, None, None, None, "latency-bound"),  # under 60 both
    (69.9, 60.0, None, None, None, "compute-bound"),  # balanced, SM higher
    (59.9, 59.9, None, None, 0.99, "small-grid"),  # under one wave
    (59.9, 59.9, None, None, 1.0, "latency-bound"),
    (30.0, 40.0, 49.9, "registers", 5.0, "occupancy-bound"),
    (30.0, 40.0, 49.9, "shared memory", 5.0, "occupancy-bound"),
    (30.0, 40.0, 50.0, "registers", 5.0, "latency-bound"),  # 50% is not low
    (30.0, 40.0, 25.0, "blocks", 5.0, "latency-bound"),  # limited by the block count, not resources
    (30.0, 85.0, 25.0, "registers", 5.0, "memory-bound"),  # a saturated unit comes first
]


@pytest.mark.parametrize("sm,mem,occ,limiter,waves,expected", EDGES)
def test_classify_counters_edges(sm, mem, occ, limiter, waves, expected):
    v = bn.classify_counters(sm_pct=sm, mem_pct=mem, theoretical_occupancy_pct=occ, occupancy_limiter=limiter, waves_per_sm=waves)
    assert v["class"] == expected, v["why"]


@pytest.mark.parametrize(
    "fraction,side,expected",
    [(0.6, "memory", "memory-bound"), (0.599, "memory", "latency-bound"), (0.95, "compute", "compute-bound"), (None, None, "unknown")],
)
def test_classify_roofline_is_marked_weaker(fraction, side, expected):
    v = bn.classify_roofline(fraction=fraction, side=side)
    assert v["class"] == expected
    assert v["evidence"] in ("roofline-only", "none")


def test_every_class_has_directions_for_triton_and_cuda():
    for cls in ("memory-bound", "compute-bound", "latency-bound", "small-grid", "occupancy-bound"):
        assert bn.next_directions(cls, "triton") and bn.next_directions(cls, "cuda")


# --- roofline --------------------------------------------------------------------------------


def test_roofline_memory_side():
    # softmax 524288 x 256 fp32 on the H100: 1 GiB moved in 358 µs, 3000 GB/s measured ceiling
    nbytes = 2 * 524288 * 256 * 4
    p = point(flops=5 * 524288 * 256, nbytes=nbytes, time_us=358.0, peak_tflops=50.0, peak_gbps=3000.0)
    assert p["side"] == "memory" and p["ridge_point"] == pytest.approx(50e12 / 3000e9)
    assert p["achieved_gbps"] == pytest.approx(nbytes / 358e-6 / 1e9)
    assert p["fraction"] == pytest.approx(p["achieved_gbps"] / 3000.0)
    assert p["target_reached"] and p["gap_to_target"] == 0.0
    slow = point(flops=None, nbytes=nbytes, time_us=716.0, peak_tflops=None, peak_gbps=3000.0)
    assert not slow["target_reached"] and slow["gap_to_target"] == pytest.approx(0.9 - slow["fraction"])


def test_roofline_compute_side_and_unknown_peak():
    p = point(flops=2 * 8192**3, nbytes=3 * 8192**2 * 2, time_us=2000.0, peak_tflops=700.0, peak_gbps=3000.0)
    assert p["side"] == "compute" and p["fraction"] == pytest.approx(2 * 8192**3 / 2e-3 / 1e12 / 700.0)
    unknown = point(flops=2 * 8192**3, nbytes=3 * 8192**2 * 2, time_us=2000.0, peak_tflops=None, peak_gbps=None)
    assert unknown["fraction"] is None and not unknown["target_reached"]


# --- hardware registry -----------------------------------------------------------------------


def test_registry_every_figure_cited_or_unknown():
    reg = hw.load_registry(ROOT / "config" / "hardware")
    assert {e["name"] for e in reg} >= {
        "NVIDIA H100 SXM", "NVIDIA H100 PCIe", "NVIDIA H200", "NVIDIA A100 SXM4 80GB", "AMD Instinct MI300X", "AMD Instinct MI355X"
    }
    for e in reg:
        figs = [e["figures"][k] for k in hw.SCALARS] + [e["figures"]["peak_tflops"][d] for d in hw.DTYPES]
        for f in figs:
            assert (f["value"] == hw.UNKNOWN and f["reason"]) or (f["source"].startswith("http") and f["where"])


def test_registry_rejects_an_uncited_figure(tmp_path):
    bad = (ROOT / "config" / "hardware" / "h100_sxm.yaml").read_text().replace("    source: https", "    src: https", 1)
    (tmp_path / "bad.yaml").write_text(bad)
    with pytest.raises(hw.RegistryError, match=r"bad\.yaml: figures\.memory_bandwidth_gbps"):
        hw.load_registry(tmp_path)


@pytest.mark.parametrize(
    "device,expected",
    [
        ("NVIDIA H100 80GB HBM3", "NVIDIA H100 SXM"),
        ("NVIDIA H100 PCIe", "NVIDIA H100 PCIe"),
        ("NVIDIA H200", "NVIDIA H200"),
        ("NVIDIA A100-SXM4-80GB", "NVIDIA A100 SXM4 80GB"),
        ("AMD Instinct MI300X", "AMD Instinct MI300X"),
        ("NVIDIA GeForce RTX 4090", None),
    ],
)
def test_registry_match(device, expected):
    e = hw.match(device, hw.load_registry(ROOT / "config" / "hardware"))
    assert (e["name"] if e else None) == expected


def test_ceilings_prefer_measured_and_never_use_unknown():
    reg = hw.load_registry(ROOT / "config" / "hardware")
    h200 = hw.match("NVIDIA H200", reg)
    c = hw.ceilings(None, h200)
    assert c["memory_gbps"] == 4800 and c["basis"]["memory"] == "cited"
    assert c["compute_tflops"]["fp32"] is None and c["basis"]["fp32"] == "unknown"
    m = hw.ceilings({"copy": {"gbps": 4100.0}, "matmul": {"fp32": {"tflops": 51.0}}}, h200)
    assert m["memory_gbps"] == 4100.0 and m["basis"]["memory"] == "measured" and m["compute_tflops"]["fp32"] == 51.0
    assert hw.ceilings(None, None)["memory_gbps"] is None  # an unknown GPU: measured ceilings only


# --- decisions on the profiler's GPU time ------------------------------------------------------


def _cand(v, medians, gpu=None, reached=None):
    return dec.Candidate(
        v, "ok", medians=medians, class_of={k: "A" for k in medians}, gpu_us=gpu or {}, target_reached=reached
    )


def test_script_faster_but_gpu_time_not_is_not_kept():
    p = dec.Params()
    comps, st = dec.fold([_cand("v0", {"a": 100.0}, {"a": 98.0}), _cand("v1", {"a": 96.0}, {"a": 98.2})], p)
    c = comps[1]
    assert c["decision"] == "discard" and c["per_class"][0]["basis"] == "profiler"
    assert c["per_class"][0]["script_delta_pct"] == pytest.approx(-4.0)
    assert "the GPU time decides" in c["per_class"][0]["disagreement"]
    assert st["best"]["version"] == "v0"


def test_script_time_decides_without_profiler():
    comps, _ = dec.fold([_cand("v0", {"a": 100.0}), _cand("v1", {"a": 96.0})], dec.Params())
    assert comps[1]["decision"] == "keep" and comps[1]["per_class"][0]["basis"] == "script"


def test_target_reached_stops_the_loop():
    comps, st = dec.fold(
        [_cand("v0", {"a": 100.0}, reached={"A": False}), _cand("v1", {"a": 80.0}, reached={"A": True})], dec.Params()
    )
    assert not comps[0]["state"]["stop"]
    assert st["stop"] and st["stop_reason"].startswith("target reached")


def test_trend_floor_keeps_tiny_repeats_a_tie():
    p = dec.Params(trend_floor_pct=0.4)
    seq = [_cand("v0", {"a": 100.0}), _cand("v1", {"a": 100.3}), _cand("v2", {"a": 100.35})]
    comps, _ = dec.fold(seq, p)
    assert [c["reason"] for c in comps[1:]] == ["tie", "tie"]
    comps, _ = dec.fold([_cand("v0", {"a": 100.0}), _cand("v1", {"a": 100.5}), _cand("v2", {"a": 100.6})], p)
    assert comps[2]["reason"] == "regression"


def test_gpu_time_is_the_median_over_calls():
    trace = torchtrace.load(FIX / "h100_torch_trace_v1_N256.json")
    per = torchtrace.per_call_us(trace, 5)
    assert len(per) == 5 and all(300 < x < 420 for x in per)
    assert torchtrace.gpu_us_per_call(trace, 5) == pytest.approx(sorted(per)[2])


def test_timers_that_differ_by_more_than_5pct_are_flagged():
    comps, _ = dec.fold([_cand("v0", {"a": 100.0}, {"a": 99.0}), _cand("v1", {"a": 90.0}, {"a": 95.0})], dec.Params())
    row, cls = comps[1]["per_config"][0], comps[1]["per_class"][0]
    assert row["timers_differ_pct"] == pytest.approx(5.555, abs=1e-3)
    assert "differ by more than 5%" in cls["disagreement"]
    comps, _ = dec.fold([_cand("v0", {"a": 100.0}, {"a": 99.0}), _cand("v1", {"a": 90.0}, {"a": 89.0})], dec.Params())
    assert comps[1]["per_class"][0]["disagreement"] is None


# --- one profiler process per version: classes told apart by NVTX ranges -------------------------

NVTX_PROBE = FIX / "h100_ncu_nvtx_classes.csv"  # benchmarks/probes/ncu_with_torch_profiler.py under ncu --nvtx


def test_ncu_nvtx_stack_names_the_class():
    import csv
    import io

    text = NVTX_PROBE.read_text()
    rows = list(csv.DictReader(io.StringIO("\n".join(ln for ln in text.splitlines() if ln.startswith('"')))))
    col = next(k for k in rows[0] if k.startswith(ncu.NVTX_COLUMN))
    by_id = {r["ID"]: ncu.nvtx_class(r[col], prefix="class ") for r in rows}
    assert by_id == {"0": "N=256", "1": "N=2048", "2": "N=2048"}  # N=2048 launched two kernels
    assert ncu.nvtx_class(rows[0][col]) is None  # no kopt-class range in this probe


def test_ncu_per_kernel_reads_like_torch_trace():
    launches = ncu.parse((FIX / "h100_ncu_details_v1.csv").read_text())
    rows = ncu.per_kernel(launches[:1])
    assert rows[0]["name"] == "softmax_one_pass" and rows[0]["us_per_call"] == launches[0]["duration_us"]
    assert rows[0]["block"] == [32, 1, 1] and rows[0]["share"] == 1.0


def _fake_profiled_run(calls, csv_text):
    from kopt.measure.runner import ChildOutcome

    def run_gated(task, req, settings, *, timeout_s, log_path, wrapper=None):
        calls.append((task, wrapper, req.get("tool")))
        if wrapper:  # what ncu writes: the probe's launches, under kopt-class ranges
            Path(wrapper[wrapper.index("--log-file") + 1]).write_text(csv_text)
        classes = [{"class": c, "config": {}, "key": f"k{c}", "seeds": [1]} for c in ("N=256", "N=2048")]
        return ChildOutcome("ok", {"device": "cuda", "env": {"gpu": "H100"}, "classes": classes, "triton": []}, gate={})

    return run_gated


def test_profile_runs_every_class_in_one_ncu_process(tiny, tmp_path, monkeypatch):
    import json

    from kopt.steps import profile as step

    calls = []
    csv_text = NVTX_PROBE.read_text().replace(":class N=", ":kopt-class N=")
    monkeypatch.setattr(step, "run_gated", _fake_profiled_run(calls, csv_text))
    monkeypatch.setattr(step, "detect_gpu", lambda device: "NVIDIA H100 80GB HBM3")
    corr = tmp_path / "correctness.json"
    corr.write_text(json.dumps({"status": "pass", "error": None}))
    settings = {"profiler": "ncu", "calls": 5, "timeout_s": 20, "device": "auto"}
    doc = step.profile(version="v0", target=str(tiny / "target.yaml"), kernel=str(tiny / "kernels" / "v0.py"),
                       correctness_json=str(corr), out_dir=str(tmp_path / "p"), asm_dir=str(tmp_path / "a"),
                       log=str(tmp_path / "log"), settings=settings)
    assert [(t, w[0], tool) for t, w, tool in calls] == [("profile", "ncu", "ncu")]  # one child, under ncu
    by = {c["class"]: c for c in doc["classes"]}
    assert by["N=256"]["ncu_launches"] == 1 and by["N=2048"]["ncu_launches"] == 2
    assert "sigmoid" in " ".join(k["name"] for k in by["N=2048"]["kernels"])
    assert doc["backend"] == "ncu" and doc["tool_note"] is None


def test_profile_falls_back_to_torch_only_when_ncu_fails(tiny, tmp_path, monkeypatch):
    import json

    from kopt.measure.runner import ChildOutcome
    from kopt.steps import profile as step

    calls = []
    ok = _fake_profiled_run(calls, "")

    def run_gated(task, req, settings, *, timeout_s, log_path, wrapper=None):
        if wrapper:
            calls.append((task, wrapper, req.get("tool")))
            return ChildOutcome("crashed", error="==ERROR== ERR_NVGPUCTRPERM")
        return ok(task, req, settings, timeout_s=timeout_s, log_path=log_path)

    monkeypatch.setattr(step, "run_gated", run_gated)
    monkeypatch.setattr(step, "detect_gpu", lambda device: "NVIDIA H100 80GB HBM3")
    corr = tmp_path / "correctness.json"
    corr.write_text(json.dumps({"status": "pass", "error": None}))
    doc = step.profile(version="v0", target=str(tiny / "target.yaml"), kernel=str(tiny / "kernels" / "v0.py"),
                       correctness_json=str(corr), out_dir=str(tmp_path / "p"), asm_dir=str(tmp_path / "a"),
                       log=str(tmp_path / "log"), settings={"profiler": "ncu", "calls": 5, "timeout_s": 20})
    assert len(calls) == 2 and calls[1][1] is None  # the second run only because the tool failed
    assert doc["backend"] == "torch" and "ERR_NVGPUCTRPERM" in doc["tool_note"]


def test_ncu_assigns_each_launch_to_its_class_range_h100():
    """v1 of the example profiled by the graph on the H100: one launch per class, named by its range."""
    launches = ncu.parse((FIX / "h100_ncu_classes_v1.csv").read_text())
    assert [ln["class"] for ln in launches] == ["N=256", "N=2048", "N=16384"]
    assert all(ln["kernel"] == "softmax_one_pass" and ln["duration_us"] > 0 for ln in launches)
