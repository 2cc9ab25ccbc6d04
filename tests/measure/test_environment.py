"""What machine ran a job (kopt.measure.environment): whether Python keeps compiled modules, which on
the H100 machine's image made every process compile torch from source (docs/runs/h100-turnaround-30s/)."""

import json
import os
import subprocess
import sys

PROBE = "import json; from kopt.measure.environment import bytecode; print(json.dumps(bytecode()))"


def _bytecode(tmp_path, **env) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX")}
    out = subprocess.run([sys.executable, "-c", PROBE], env={**base, **env}, capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def test_no_bytecode_written_nor_found_is_a_warning(tmp_path):
    b = _bytecode(tmp_path, PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=str(tmp_path / "empty"))
    assert b["dont_write_bytecode"] and not b["torch_compiled"]
    assert "every kopt process compiles all it imports" in b["warning"]


def test_bytecode_written_or_found_is_no_warning(tmp_path):
    cache = str(tmp_path / "cache")
    written = _bytecode(tmp_path, PYTHONPYCACHEPREFIX=cache)  # fills the cache as it imports
    assert not written["dont_write_bytecode"] and written["warning"] is None
    found = _bytecode(tmp_path, PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=cache)
    assert found["torch_compiled"] and found["warning"] is None
