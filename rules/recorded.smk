rule recorded:
    """The version's files kept by content, and the exact package versions, for `kopt rerun`."""
    input:
        files=recorded_files,
        correctness="results/{version}/correctness.json",
        workspace=ws_file("target.yaml"),
    output:
        directory("results/{version}/recorded"),
    log:
        "results/logs/{version}/recorded.log",
    benchmark:
        "results/benchmarks/{version}/recorded.tsv"
    conda:
        "../envs/kopt.yaml"
    script:
        "../scripts/recorded.py"
