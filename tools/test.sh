#!/usr/bin/env bash
# Install into .venv (torch 2.13.0 CPU first, so nothing pulls CUDA wheels) and run the tests.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/install.sh
.venv/bin/snakemake --lint
.venv/bin/snakefmt --check .
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/python -m pytest -q tests
