rule bench:
    """Per-config timing (skipped, with the reason, when the correctness gate did not pass)."""
    input:
        fresh=rebuilt_if_stale("results/{version}/bench.json"),
        settings=SETTINGS["bench"],
        kernel=kernel_of,
        sources=sources_of,
        builds=builds_of,
        ref=REF,
        target=ws_file("target.yaml"),
        correctness="results/{version}/correctness.json",
        hardware=HARDWARE_JSON,
    output:
        csv="results/{version}/bench.csv",
        samples="results/{version}/bench_samples.csv",
        meta="results/{version}/bench.json",
    log:
        "results/logs/{version}/bench.log",
    benchmark:
        "results/benchmarks/{version}/bench.tsv"
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/bench.py"
