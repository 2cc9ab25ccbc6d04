"""The commands kopt prints: targets before --config, and the command that made a results tree."""

import json

from kopt.workspace.commands import for_target, from_results, overrides, snakemake_command


def test_commands_put_targets_before_config():
    cmd = snakemake_command(
        "examples/gemm",
        extra=overrides({"device": "cpu", "noise_pct": 1.0, "bench": {}}, {"device": "auto", "noise_pct": 1.0}),
    )
    assert (
        for_target(cmd, "results/v3/compare.json")
        == "snakemake --cores 1 results/v3/compare.json --config workspace=examples/gemm device=cpu"
    )
    assert (
        for_target(from_results("w", "runs/x/results"), "t") == "snakemake -d runs/x --cores 1 t --config workspace=w"
    )


def test_kopt_prints_the_command_that_made_the_tree(tmp_path):
    """kopt status/new: the command recorded by the last run (its -s, -d and --config values)."""
    made = "snakemake -s /p/Snakefile -d /p/runs/x --cores 1 {target} --config workspace=w noise_pct=2"
    (tmp_path / "results" / "settings").mkdir(parents=True)
    (tmp_path / "results" / "settings" / "report.json").write_text(json.dumps({"command": made}))
    assert from_results("w", tmp_path / "results") == made
