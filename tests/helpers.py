"""Helpers shared by several test modules: the project's paths, one version through the correctness and
bench steps, the Snakemake graph on a copy of the project (and what is built once per test run), and a
small results tree for the reports."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pandas as pd
import yaml

from kopt.loop import decide
from kopt.report.results import load
from kopt.steps.bench import check_then_time

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
BAD = FIXTURES / "bad_kernels"
# The published skill template's files, verbatim (../shared/formats/skill-template/, beside the repo
# in CI); where ../shared is not there (the GPU machine), examples/vector_add/, which carries them
# verbatim (tests/graph/test_examples.py compares the two)
SHARED_TEMPLATE = ROOT.parent / "shared" / "formats" / "skill-template"
TEMPLATE_IN_EXAMPLE = {"ref.py": "ref.py", "kernel.py": "kernels/v0.py", "kernel.cu": "kernels/v1.cu"}


def artifacts(name: str) -> Path:
    """Where a test keeps what a person looks at after the run (screenshots): $KOPT_ARTIFACTS/<name>
    (.ci/run sets it to ci-artifacts/ in its clone), else a fresh temporary folder."""
    root = os.environ.get("KOPT_ARTIFACTS")
    return Path(root) / name if root else Path(tempfile.mkdtemp(prefix=f"kopt-{name}-"))


def template(name: str) -> Path:
    """One file of the skill template: ref.py, kernel.py or kernel.cu."""
    if SHARED_TEMPLATE.is_dir():
        return SHARED_TEMPLATE / name
    return ROOT / "examples" / "vector_add" / TEMPLATE_IN_EXAMPLE[name]


# the NVTX probe: benchmarks/probes/ncu_with_torch_profiler.py under ncu --nvtx
NVTX_PROBE = FIXTURES / "profiles" / "h100_ncu_nvtx_classes.csv"

# --- one version through the steps (on the CPU through the Triton interpreter) ----------------


def run_version(tiny: Path, kernel: Path, params: dict, tmp: Path, hardware_json: str | None = None):
    """Correctness then bench of one kernel on a workspace; (correctness doc, bench.csv, out dir)."""
    out = tmp / "out"
    target, log = str(tiny / "target.yaml"), str(out / "steps.log")
    corr, df = check_then_time(
        out, version="v9", target=target, kernel=str(kernel), log=log, params=params, hardware_json=hardware_json
    )
    return corr, df, out


def gpu_time(df: pd.DataFrame) -> pd.Series:
    """The deciding GPU time per config: Nsight Compute's where it decided, else torch.profiler's."""
    return df["gpu_us"] if "gpu_us" in df and df["gpu_us"].notna().all() else df["profiler_us"]


def _copy(src: Path, dst: Path, **target) -> Path:
    shutil.copytree(src, dst)
    doc = yaml.safe_load((dst / "target.yaml").read_text())
    doc.update(target)
    (dst / "target.yaml").write_text(yaml.safe_dump(doc))
    return dst


def _counting(monkeypatch, module) -> list[dict]:
    """Replace ``module.event_time_us`` by a wrapper of the real one that records each call."""
    from kopt.inside import calls as timer  # imports torch: only where a test uses it

    calls: list[dict] = []
    real = timer.event_time_us

    def counted(fn, device, **kw):
        calls.append({"device": device, **kw})
        return real(fn, device, **kw)

    monkeypatch.setattr(module, "event_time_us", counted)
    return calls


@contextlib.contextmanager
def kernel_process(kernel: str | Path, device: str = "cpu", **kw):
    """A kernel's own process (kopt.inside) started by this test as a judge would, ready to run."""
    from kopt.measure.boundary import KernelProcess

    if device == "cpu":  # as the judge starts it there (kopt.measure.child._interpreted)
        kw.setdefault("env", {"TRITON_INTERPRET": "1"})
    proc = KernelProcess(str(kernel), **kw)
    try:
        proc.ask({"op": "go", "env": {}, "device": device, "kernel": str(kernel), "ref": "", "builds": {}})
        yield proc
    finally:
        proc.end()


# --- the Snakemake graph on a copy of the project (the e2e tests) ---------------------------------


def snakemake(cwd: Path, *args: str, config=()) -> subprocess.CompletedProcess:
    """Snakemake on the CPU; a user-wide experience store would land in cwd/xdg (none must)."""
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--cores", "1", *args, "--config", "device=cpu", *config],
        cwd=cwd,
        env={**os.environ, "XDG_DATA_HOME": str(cwd / "xdg")},
        capture_output=True,
        text=True,
        timeout=600,
    )


def copy_project(dst: Path) -> Path:
    """The workflow and the example, without results."""
    for name in ("Snakefile", "rules", "scripts", "config", "envs", "kopt", "report", "profiles"):
        src = ROOT / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, dst / name)
    shutil.copytree(ROOT / "examples" / "softmax", dst / "examples" / "softmax")
    return dst


def copy_tree(src: Path, dst: Path) -> Path:
    """A copy of a built project that Snakemake takes as up to date, as a user's moved project: every
    file's and folder's modification time kept (copy2, copystat), links kept as links."""
    shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
    return dst


# The softmax example's graph in stages, each built on a copy of the stage before it (tests/conftest.py
# builds each once per test run): stage -> (the stage it continues, its targets)
SOFTMAX_STAGES = {
    "v0": (None, ("results/v0/compare.json",)),
    "v1": ("v0", ("results/v1/compare.json",)),
    "all": ("v1", ()),  # the default target: every version, the reports
}


def once_per_run(root: Path, name: str, build) -> Path:
    """``root/name``, made by ``build(folder)`` once per test run: the first xdist worker to ask builds
    it under a file lock while the others wait, then all read it. A failed build is recorded and
    failed again for every later asker rather than rebuilt."""
    from filelock import FileLock  # the test extra's (pyproject.toml), and torch's

    folder, done, failed = root / name, root / f"{name}.done", root / f"{name}.failed"
    with FileLock(str(root / f"{name}.lock")):
        if failed.is_file():
            raise AssertionError(f"{name}, built once for this test run, failed:\n{failed.read_text()}")
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            try:
                build(folder)
            except Exception as e:
                failed.write_text(f"{type(e).__name__}: {e}")
                raise
            done.touch()
    return folder


def _tree(results: Path) -> dict:
    return {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in results.rglob("*") if p.is_file()}


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


# --- a small results tree for the reports (tests/report) -------------------------------------------


NAN = math.nan


CLASS = {"A1": "N=256", "A2": "N=256", "B1": "N=2048"}


# per version: (script medians, profiler GPU times); v0's profiler gave nothing for B1, so the fold
# decides N=2048 on the script's median against v0 and N=256 on the GPU time
TIMES = {
    "v0": ({"A1": 100.0, "A2": 200.0, "B1": 400.0}, {"A1": 90.0, "A2": 180.0, "B1": NAN}),
    "v1": ({"A1": 80.0, "A2": 170.0, "B1": 390.0}, {"A1": 60.0, "A2": 150.0, "B1": 370.0}),
    "v2": ({"A1": 85.0, "A2": 175.0, "B1": 395.0}, {"A1": 70.0, "A2": 160.0, "B1": 380.0}),
}


# torch eager has GPU times, torch.compile none (its profiler failed, say)
TORCH = {
    "eager": ({"A1": 120.0, "A2": 240.0, "B1": 500.0}, {"A1": 110.0, "A2": 220.0, "B1": 480.0}),
    "compile": ({"A1": 130.0, "A2": 230.0, "B1": 450.0}, {"A1": NAN, "A2": NAN, "B1": NAN}),
}


FRACTION = {"N=256": 0.5, "N=2048": 0.6}


def _bench(script: dict, gpu: dict) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "config_key": list(script),
            "config_class": [CLASS[k] for k in script],
            "status": "ok",
            "median_us": list(script.values()),
            "profiler_us": [gpu[k] for k in script],
            "device": "Test GPU",
            "method": "cuda-events",
            "error": None,
        }
    )


def _bottleneck() -> dict:
    return {
        "status": "ok",
        "classes": [
            {
                "class": c,
                "bottleneck": "memory-bound",
                "roofline_fraction_min": f,
                "roofline": [{"arithmetic_intensity": 0.25, "achieved_tflops": f, "peak_tflops": 60.0}],
                "next_directions": [{"idea": "more bytes in flight"}],
            }
            for c, f in FRACTION.items()
        ],
    }


def make_tree(root: Path, target: float | None = 0.75) -> Path:
    """results/ as the graph leaves it, for what the reports read: compare.json made by the fold."""
    rd = root / "results"
    state = decide.initial_state()
    for v, (script, gpu) in TIMES.items():
        (rd / v).mkdir(parents=True)
        df = _bench(script, gpu)
        df.to_csv(rd / v / "bench.csv", index=False)
        cand = decide.Candidate(
            v, "ok", medians=dict(script), class_of=CLASS, gpu_us={k: t for k, t in gpu.items() if t == t}
        )
        comp, state = decide.decide(state, cand, decide.Params(noise_pct=1.0))
        comp.update(
            device="Test GPU",
            method="cuda-events",
            target_classes="all",
            provenance={"created": "2026-01-02T03:04:05+00:00", "kernel_sha256": f"{v}0123456789abcdef"},
        )
        (rd / v / "compare.json").write_text(json.dumps(comp))
        (rd / v / "bottleneck.json").write_text(json.dumps(_bottleneck()))
    for impl, (script, gpu) in TORCH.items():
        (rd / "baselines" / impl).mkdir(parents=True)
        _bench(script, gpu).to_csv(rd / "baselines" / impl / "bench.csv", index=False)
    (rd / "env_check.json").write_text(json.dumps({"gpu": "Test GPU"}))
    (rd / "hardware").mkdir()
    (rd / "hardware" / "test.json").write_text(json.dumps({"gpu": "Test GPU", "ceilings": {"memory_gbps": 3000.0}}))
    (rd / "settings").mkdir()
    report = {"command": "snakemake --cores 1 {target}", "kernel_type": "t"}
    if target is not None:
        report["target_fraction"] = target
    (rd / "settings" / "report.json").write_text(json.dumps(report))
    return rd


def _load(rd: Path):
    vs = list(TIMES)
    metas = [str(rd / f"{v}.yaml") for v in vs]
    return load(rd, vs, metas, [f"{v}.py" for v in vs], hardware=rd / "hardware" / "test.json")


def _compare(rd_or_res, v: str) -> dict:
    return next(x for x in rd_or_res.versions if x.name == v).compare


def _geo(xs) -> float:
    return decide.geomean(list(xs))
