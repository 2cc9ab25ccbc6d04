rule correctness:
    """The correctness gate: every config, fresh seeds, float64 reference, poisoned outputs."""
    input:
        settings=SETTINGS["run"],
        kernel=kernel_of,
        sources=sources_of,
        ref=ws_file("ref.py"),
        target=ws_file("target.yaml"),
    output:
        json="results/{version}/correctness.json",
        md="results/{version}/correctness.md",
    log:
        "results/logs/{version}/correctness.log",
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/correctness.py"
