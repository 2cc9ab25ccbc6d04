"""No false "faster": inputs never repeat predictably, results above the hardware's physical limit
are refused, seeds are fresh per run and recorded. On the CPU through the Triton interpreter."""

import collections
import json
from pathlib import Path

import pandas as pd
import pytest
import torch

from kopt.analysis.registry import physical_limits
from kopt.analysis.roofline import beyond_hardware
from kopt.measure import reference
from kopt.measure.inputs import Pool, Seeds, pool_size
from kopt.measure.variants import load_reference
from kopt.steps.compare import candidate
from tests.test_bad_kernels import BAD, run_version

ROOT = Path(__file__).resolve().parents[1]
GEMM = ROOT / "examples" / "kernelbench" / "gemm_add_relu"


@pytest.mark.parametrize("kernel", ["gemm_replay_pointers.py"])
def test_replay_keyed_on_buffers_is_caught(tmp_path, run_params, monkeypatch, kernel):
    """It replays on buffers it has seen, but those now hold fresh values: the stale product fails."""
    log = tmp_path / "replays.txt"
    monkeypatch.setenv("KOPT_TEST_REPLAY_LOG", str(log))
    corr, df, _ = run_version(GEMM, BAD / kernel, run_params, tmp_path)
    errors = " ".join([str(corr["error"])] + [str(e) for e in df["error"]])
    assert log.is_file() and log.read_text().strip(), "the fixture never replayed: the test proves nothing"
    assert not (corr["status"] == "pass" and (df["status"] == "ok").all()), errors
    assert "outside atol" in errors or "wrong or unwritten" in errors, errors


@pytest.mark.parametrize("kernel", ["gemm_replay_content.py", "gemm_replay_identity.py"])
def test_replay_keyed_on_content_or_version_never_replays(tmp_path, run_params, monkeypatch, kernel):
    """Keyed on sampled values (the issue's exploit) or on tensor versions, it never finds a match:
    every timed call did the honest work, so its time is honest."""
    log = tmp_path / "replays.txt"
    monkeypatch.setenv("KOPT_TEST_REPLAY_LOG", str(log))
    corr, df, out = run_version(GEMM, BAD / kernel, run_params, tmp_path)
    assert corr["status"] == "pass" and (df["status"] == "ok").all(), [corr["error"]] + df["error"].tolist()
    assert not log.exists(), f"replayed {len(log.read_text().split())} call(s)"
    samples = pd.read_csv(out / "bench_samples.csv")
    assert samples["seed"].nunique() == len(samples)  # every timed call had inputs of its own


def _hardware(tmp_path: Path, gbps: float, tflops: float, device: str = "cuda") -> str:
    p = tmp_path / "hardware.json"
    p.write_text(json.dumps({"device": device, "ceilings": {"memory_gbps": gbps, "compute_tflops": {"fp32": tflops, "bf16": None}, "basis": {"memory": "measured", "fp32": "measured"}}}))
    return str(p)


def test_faster_than_the_hardware_is_refused(tiny, tmp_path, run_params):
    hw = _hardware(tmp_path, gbps=1e-9, tflops=1e-12)  # a fake ceiling every kernel beats
    corr, df, out = run_version(tiny, tiny / "kernels" / "v0.py", run_params, tmp_path, hardware_json=hw)
    assert corr["status"] == "pass"
    assert (df["status"] == "failed").all()
    assert df["error"].str.contains("faster than the hardware allows").all()
    assert df["error"].str.contains("result reuse or skipped work?").all()
    cand = candidate("v9", str(out / "correctness.json"), df, {}, "k.py")
    assert cand.status == "failed" and "faster than the hardware allows" in cand.reason
    assert json.loads((out / "bench.json").read_text())["physical_limit"]["checked"] is True


def test_cpu_ceilings_are_not_a_physical_limit(tiny, tmp_path, run_params):
    """The CPU's ceilings are DRAM rates; the interpreter's tiny configs run from cache."""
    hw = _hardware(tmp_path, gbps=1e-9, tflops=1e-12, device="cpu")
    _, df, out = run_version(tiny, tiny / "kernels" / "v0.py", {**run_params, "device": "cpu"}, tmp_path, hardware_json=hw)
    assert (df["status"] == "ok").all()
    assert json.loads((out / "bench.json").read_text())["physical_limit"]["checked"] is False


def test_within_the_hardware_is_timed(tiny, tmp_path, run_params):
    hw = _hardware(tmp_path, gbps=1e6, tflops=1e6)
    _, df, _ = run_version(tiny, tiny / "kernels" / "v0.py", run_params, tmp_path, hardware_json=hw)
    assert (df["status"] == "ok").all(), df["error"].tolist()


def test_the_issues_replayed_gemm_is_beyond_the_h100():
    """8192^3 bf16 in 99.6 us (the replay kept on the H100 before this check) against the measured
    H100 ceilings: refused; the tutorial GEMM at 769 TFLOP/s is not."""
    limits = physical_limits(
        {"memory_gbps": 2967.0, "compute_tflops": {"fp32": 51.5, "tf32": 394.7, "bf16": 780.9, "fp16": 750.6, "fp8": 1403.4},
         "basis": {"memory": "measured", "fp8": "measured"}}
    )
    assert limits["compute_tflops"] == 1403.4 and "fp8" in limits["compute_basis"]
    flops, nbytes = 2 * 8192**3, 3 * 8192 * 8192 * 2
    why = beyond_hardware(flops=flops, nbytes=nbytes, time_us=99.6, limits=limits, margin_pct=15)
    assert why and "TFLOP/s" in why and "GB/s" in why
    honest_us = flops / 769e12 * 1e6
    assert beyond_hardware(flops=flops, nbytes=nbytes, time_us=honest_us, limits=limits, margin_pct=15) is None


def test_seeds_are_fresh_per_run_and_recorded(tiny, tmp_path, run_params):
    runs = [run_version(tiny, tiny / "kernels" / "v0.py", run_params, tmp_path / str(i)) for i in range(2)]
    seeds = [{s["seed"] for c in corr["configs"] for s in c["seeds"]} for corr, _, _ in runs]
    assert len(seeds[0]) == 6 and not seeds[0] & seeds[1]  # never derivable from the config
    for _, df, out in runs:
        samples = pd.read_csv(out / "bench_samples.csv")
        assert samples["seed"].notna().all() and samples["seed"].nunique() == len(samples)
        meta = json.loads((out / "bench.json").read_text())
        for rec in meta["inputs"]["per_config"].values():
            assert rec["pool"]["sets"] >= 4 and rec["pool"]["seeds"].startswith("fresh")
            assert rec["reference"]["precision"] == "float64"


def test_a_fixed_seed_repeats_a_run(tiny, tmp_path, run_params):
    params = {**run_params, "inputs": {"seed": 7}}
    runs = [run_version(tiny, tiny / "kernels" / "v0.py", params, tmp_path / str(i))[0] for i in range(2)]
    seeds = [[s["seed"] for c in corr["configs"] for s in c["seeds"]] for corr in runs]
    assert seeds[0] == seeds[1]


@pytest.mark.parametrize(
    "one, free, reserve, n, says",
    [(100, 10_000, 100, 8, "configured maximum"), (100, 600, 100, 5, "(memory)"), (100, 250, 100, 1, "only 1 set")],
)
def test_pool_size(one, free, reserve, n, says):
    got, why = pool_size(one, free, reserve, max_sets=8, min_sets=4)
    assert got == n and says in why


def test_pool_visits_sets_in_random_order_with_fresh_values():
    ref = load_reference(ROOT / "examples" / "softmax" / "ref.py")
    cfg = {"M": 4, "N": 8, "dtype": "float32"}
    layout, _ = reference.probe(ref, cfg, "cpu", 1)
    pool = Pool(ref, cfg, layout, "cpu", Seeds(None, "k", "test"), 4, "test")
    ptrs = {s.index: s.inputs["x"].data_ptr() for s in pool.sets}
    assert len(set(ptrs.values())) == 4  # each set in its own buffers
    order, seen = [], set()
    for _ in range(200):
        s = pool.next()
        before = s.inputs["x"].clone()
        pool.redraw(s)
        assert s.inputs["x"].data_ptr() == ptrs[s.index] and not torch.equal(before, s.inputs["x"])
        assert s.seed not in seen
        seen.add(s.seed)
        order.append(s.index)
    assert all(a != b for a, b in zip(order, order[1:])) and set(order) == {0, 1, 2, 3}
    assert len(set(tuple(order[i : i + 4]) for i in range(0, 200, 4))) > 10  # no fixed cycle
    pool.next()  # mid-cycle: a new cycle makes the next whole cycles visit every set equally
    pool.new_cycle()
    counts = collections.Counter(pool.next().index for _ in range(3 * 4))
    assert counts == {0: 3, 1: 3, 2: 3, 3: 3}
