#!/usr/bin/env bash
# Install into .venv (torch 2.13.0 CPU first, so nothing pulls CUDA wheels; nvcc from NVIDIA's wheels,
# so the CUDA versions compile on the CPU too) and run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v g++ >/dev/null || { apt-get update -q && apt-get install -y -q g++; }  # nvcc's host compiler
# Debian's Chromium: the docs site and the HTML report are opened headless (tools/page_check.py)
command -v chromium >/dev/null || { apt-get update -q && apt-get install -y -q chromium; }
KOPT_EXTRAS=test,cuda,slurm bash tools/install.sh
.venv/bin/snakemake --lint
.venv/bin/snakefmt --check .
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# every core (a worker more than the cores took 18:59 against 18:16: the work is the CPU's), one test
# file per worker at a time (a file's module fixtures are made once), the files
# in collection order: xdist's default reorder (most tests first) left the end-to-end graph files of
# one or two long tests for last, one worker running them while the other waited. The graphs that
# several files read are built once per run (tests/conftest.py: softmax_graph).
# Python writes bytecode here, whatever the machine's image says (PYTHONDONTWRITEBYTECODE): each of the
# graphs' hundreds of processes otherwise compiles every kopt module it imports
unset PYTHONDONTWRITEBYTECODE
.venv/bin/python -m pytest -q -n auto --dist loadfile --no-loadscope-reorder --durations=40 tests
