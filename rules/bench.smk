rule check_then_time:
    """The correctness gate (every config, fresh seeds, float64 reference, poisoned outputs), then,
    only when every config passed, the timing per config: one child process, so torch starts once.
    """
    input:
        fresh=rebuilt_if_stale("results/{version}/correctness.json"),
        fresh_bench=rebuilt_if_stale("results/{version}/bench.json"),
        settings=SETTINGS["bench"],
        kernel=kernel_of,
        sources=sources_of,
        builds=builds_of,
        ref=REF,
        target=ws_file("target.yaml"),
        reference="results/reference.json",
        hardware=HARDWARE_JSON,
    output:
        correctness="results/{version}/correctness.json",
        correctness_md="results/{version}/correctness.md",
        csv="results/{version}/bench.csv",
        samples="results/{version}/bench_samples.csv",
        meta="results/{version}/bench.json",
    log:
        "results/logs/{version}/check_then_time.log",
    benchmark:
        "results/benchmarks/{version}/check_then_time.tsv"
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/check_then_time.py"
