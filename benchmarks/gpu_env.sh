# Sourced by the scripts that run on the GPU machine (h100_run.sh, ab_turnaround.sh, multi_gpu.sh):
# Snakemake from the wheels in .whl/ (../shared/gpu/make-wheels.sh; leave out pulp's 16 MB wheel when the
# carried tree nears the device's 64 MiB: Snakemake then falls back to its greedy scheduler, the same
# order for --cores 1), the repo on PYTHONPATH (child
# processes import kopt), $OUT, and Python's bytecode kept. The GPU image sets
# PYTHONDONTWRITEBYTECODE=1 and its packages carry no bytecode, so there every Python process
# compiles all it imports, every time: `import torch` 5.1-7.4 s against 1.7-2.5 s, `import snakemake.cli`
# 3.0 s against 0.9 s, torch.profiler's first session 6.8 s against 1.4 s
# (docs/runs/h100-turnaround-30s/fixed_costs*.txt). pip writes the bytecode on a normal install;
# here it goes to a cache on first import. IMAGE_PYTHON=1 keeps the image's setting.
python3 -m pip install -q --upgrade --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>&1 | grep -v "already exists" || true
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
export OUT=${OUT:-/tmp/kopt-out}
mkdir -p "$OUT"
if [ -z "${IMAGE_PYTHON:-}" ]; then
  unset PYTHONDONTWRITEBYTECODE
  export PYTHONPYCACHEPREFIX=/tmp/pycache
fi
