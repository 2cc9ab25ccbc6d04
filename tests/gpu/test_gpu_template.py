"""GPU-only: the published skill template's files as they are (ref.py writing `out` in place into
a torch.empty buffer, `setup(n=1024, seed=42, **kwargs)` with its hard-coded device="cuda", the
Triton `run_kernel` and the CUDA `solve(float* in0, float* in1, float* out, int n)` that
synchronises inside), and an in-place target of our own (examples/rmsnorm), through the gate and
the timing. At 40964bc every one of them failed before any version ran."""

import shutil
from pathlib import Path

import yaml

from kopt.steps.bench import check_then_time
from kopt.steps.build import build
from tests.conftest import BUILD_DEFAULTS
from tests.helpers import ROOT, run_version, template

# n=1000: a partial last block; the tail of a reused allocation is garbage on the GPU
SMALL = [{"n": 1000}, {"n": 1 << 20}]


def _workspace(tmp: Path, src: Path, configs: list[dict]) -> Path:
    ws = tmp / "ws"
    shutil.copytree(src, ws, ignore=shutil.ignore_patterns("kernels"))
    (ws / "kernels").mkdir()
    doc = yaml.safe_load((ws / "target.yaml").read_text())
    (ws / "target.yaml").write_text(yaml.safe_dump({**doc, "configs": configs}))
    return ws


def _template_workspace(tmp: Path) -> Path:
    ws = _workspace(tmp, ROOT / "examples" / "vector_add", SMALL)
    shutil.copy(template("ref.py"), ws / "ref.py")
    shutil.copy(template("kernel.py"), ws / "kernels" / "v0.py")
    shutil.copy(template("kernel.cu"), ws / "kernels" / "v1.cu")
    return ws


def _table(df):
    return df[["config_key", "status", "method", "median_us", "profiler_us", "error"]].to_string()


def test_the_template_triton_kernel_runs_as_it_is(tmp_path, run_params):
    ws = _template_workspace(tmp_path)
    corr, df, _ = run_version(ws, ws / "kernels" / "v0.py", run_params, tmp_path)
    print(_table(df))
    assert corr["device"] == "cuda" and corr["status"] == "pass", corr["error"]
    assert corr["configs"][0]["reference_returns"] is False and (df["status"] == "ok").all()


def test_the_template_cuda_solve_runs_as_it_is(tmp_path, run_params):
    ws = _template_workspace(tmp_path)
    src, out = ws / "kernels" / "v1.cu", tmp_path / "v1"
    settings = {"timeout_s": 300, "gpu": "auto", "build": BUILD_DEFAULTS}
    doc = build(version="v1", kernel=str(src), out_dir=str(out / "build"), settings=settings)
    assert doc["status"] == "ok", doc["error"]
    corr, df = check_then_time(
        out, version="v1", target=str(ws / "target.yaml"), kernel=str(src), log=str(out / "log"), params=run_params,
        builds=[str(out / "build")],
    )  # fmt: skip
    print(_table(df))
    assert corr["status"] == "pass", corr["error"]
    assert (df["status"] == "ok").all() and set(df["method"]) == {"cuda-events+l2-flush+host-bound"}


def test_an_in_place_target_with_torch_empty_outputs(tmp_path, run_params):
    ws = _workspace(tmp_path, ROOT / "examples" / "rmsnorm", [{"M": 64, "N": 1000, "dtype": "float32"}])
    for v in ("v0", "v1"):
        shutil.copy(ROOT / "examples" / "rmsnorm" / "kernels" / f"{v}.py", ws / "kernels" / f"{v}.py")
        corr, df, _ = run_version(ws, ws / "kernels" / f"{v}.py", run_params, tmp_path / v)
        print(v, _table(df))
        assert corr["status"] == "pass", corr["error"]
        assert (df["status"] == "ok").all()
