"""Drive a real judge (kopt.steps.bench.check_then_time via tests/helpers.run_version) on kernel k/NAME.py.
usage: PYTHONPATH=/work/main /work/main/.venv/bin/python run.py NAME"""
import os, shutil, sys, pathlib
sys.path.insert(0, "/work/main")
from tests.helpers import run_version, FIXTURES, ROOT
name = sys.argv[1]
D = pathlib.Path("/tmp/review33"); W = D / f"work-{name}"
shutil.rmtree(W, ignore_errors=True); W.mkdir()
tiny = W / "tiny"; shutil.copytree(FIXTURES / "tiny", tiny)
shutil.copy(ROOT / "examples/softmax/ref.py", tiny / "ref.py")
shutil.copy(ROOT / "examples/softmax/kernels/v1.py", tiny / "kernels/v0.py")
kd = W / "kernel"; kd.mkdir()
os.environ["KOPT_ATTACK_LOG"] = str(kd / "attack.log")
os.environ["KOPT_KERNEL_WRITABLE"] = str(kd)
os.environ["KOPT_ATTACK_TARGET"] = str(W / "out")
os.environ.setdefault("KOPT_SCRATCH_ROOT", str(W))  # scratch folders here (same fs as the secret)
params = {"device": "auto", "timeout_s": 20, "bench": {"warmup_ms": 10, "rep_ms": 20, "min_samples": 10,
          "max_samples": 50, "flush_l2": True, "cpu_warmup": 1, "cpu_samples": 2}}
corr, df, out = run_version(tiny, D / "k" / f"{name}.py", params, W)
print("VERDICT:", corr["status"], corr.get("error"), list(df.get("status", [])))
print("ATTACK LOG:", (kd / "attack.log").read_text() if (kd / "attack.log").exists() else "(none)")
print("=== steps.log (cat -v style) ===")
print((out / "steps.log").read_bytes().decode(errors="replace").encode("unicode_escape").decode().replace("\\n", "\n"))
