"""envs/kopt.yaml (the rules' conda environment) pins exactly what this test run has installed: the
versions CI uses."""

import platform
from importlib import metadata
from pathlib import Path

import yaml

from tests.helpers import ROOT


def test_the_conda_environment_pins_the_versions_installed_here():
    env = yaml.safe_load((ROOT / "envs" / "kopt.yaml").read_text())
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    assert platform.python_version().startswith(python.split("=")[1] + ".")
    pins = [p for p in next(d for d in env["dependencies"] if isinstance(d, dict))["pip"] if "==" in p]
    assert len(pins) >= 10
    for pin in pins:
        name, version = pin.split("==")
        installed = metadata.version(name).split("+")[0]  # torch's local label (+cpu) aside
        assert installed == version, f"envs/kopt.yaml pins {pin}, this environment has {name} {installed}"
    assert Path(ROOT / "envs" / "kopt.yaml").read_text().count("-e ..") == 1
