#!/usr/bin/env bash
# Create .venv with kernel-opt and its dependencies. torch is installed first, pinned, because an
# unpinned torch on a CPU machine downloads several GB of CUDA wheels; on a GPU machine with its
# own torch, set KOPT_SYSTEM_TORCH=1 to reuse it. KOPT_EXTRAS: the extras to install (test; the
# tests add cuda, nvcc from NVIDIA's wheels).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
  if [ "${KOPT_SYSTEM_TORCH:-0}" = 1 ]; then python3 -m venv --system-site-packages .venv; else python3 -m venv .venv; fi
fi
.venv/bin/python -m pip install -q --no-compile --upgrade pip 2>&1 | grep -v "is ignored" || true
if [ "${KOPT_SYSTEM_TORCH:-0}" != 1 ]; then
  .venv/bin/python -m pip install -q --no-compile torch==2.13.0 2>&1 | grep -v "is ignored" || true
  .venv/bin/python -m pip install -q --no-compile triton==3.6.0 2>&1 | grep -v "is ignored" || true
fi
# the versions envs/kopt.yaml pins (the rules' conda environment, tests/test_envs.py), as pip
# constraints: a fresh install is the same install, whatever was released since
grep -oE '^ +- [A-Za-z0-9_.-]+==[^ ]+' envs/kopt.yaml | sed 's/^ *- //' | grep -vE '^(torch|triton)==' > .venv/constraints.txt
.venv/bin/python -m pip install -q --no-compile -c .venv/constraints.txt -e ".[${KOPT_EXTRAS:-test}]" 2>&1 | grep -v "is ignored" || true
# the bytecode of all that, on every core at once: pip compiles one file at a time (torch alone: 48.6 s
# installed with it, 15.9 s without, on 2 cores); a file that does not compile (a template) is skipped as pip skips it.
# Not the packages' own tests, nor packages no graph imports (torch's sympy and networkx, the installers, the
# docs' highlighter and fonts: 5,800 of 11,500 files, 11 s of the 27 on 2 cores); Python compiles what one
# of them imports after all on its first import
unused='/(tests|sympy|networkx|pip|setuptools|pygments|docutils|mpmath|playwright|torchgen|fontTools)/'
.venv/bin/python -m compileall -q -j "$(nproc 2>/dev/null || echo 1)" -x "$unused" "$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" > /dev/null 2>&1 || true
.venv/bin/python -c "import torch, triton, snakemake, kopt" || { echo "tools/install.sh: install failed" >&2; exit 1; }
