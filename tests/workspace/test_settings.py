"""kopt.workspace.settings: each rule's settings, and when a settings file counts as changed."""

import yaml

from kopt.workspace import settings
from tests.helpers import ROOT


def _config() -> dict:
    return yaml.safe_load((ROOT / "config" / "config.yaml").read_text())


def test_each_rule_gets_only_what_its_results_depend_on():
    s = settings.from_config(_config(), gpu="NVIDIA H100 80GB HBM3", kernel_type="softmax", command="snakemake")
    assert set(s) == set(settings.NAMES)
    assert "noise_pct" in s["decide"] and "noise_pct" not in s["bench"]
    assert s["bottleneck"] == {"target_fraction": _config()["roofline_target"]}
    assert s["report"]["target_fraction"] == _config()["roofline_target"]
    assert s["hardware"]["gpu"] == "NVIDIA H100 80GB HBM3" and "bench" not in s["hardware"]


def test_a_settings_file_changes_only_when_its_values_do(tmp_path):
    p = tmp_path / "decide.json"
    assert not settings.changed(p, {"noise_pct": 1.0})  # no file yet: nothing to compare
    settings.write(p, {"noise_pct": 1.0, "max_consecutive_regressions": 5})
    assert not settings.changed(p, {"max_consecutive_regressions": 5, "noise_pct": 1.0})  # key order aside
    assert settings.changed(p, {"noise_pct": 7.0, "max_consecutive_regressions": 5})
    assert settings.read(p) == {"noise_pct": 1.0, "max_consecutive_regressions": 5}
