rule reference:
    """ref.py alone, before any version: it imports, and setup() and reference() run on every config."""
    input:
        fresh=rebuilt_if_stale("results/reference.json"),
        settings=SETTINGS["run"],
        owner="results/workspace.json",
        ref=REF,
        target=ws_file("target.yaml"),
    output:
        json="results/reference.json",
    log:
        "results/logs/reference.log",
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/reference.py"
