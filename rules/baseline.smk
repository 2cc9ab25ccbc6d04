rule baseline:
    """The reference in torch eager and torch.compile, checked and timed like a version."""
    input:
        settings=SETTINGS["bench"],
        ref=REF,
        target=ws_file("target.yaml"),
        hardware=HARDWARE_JSON,
        reference="results/reference.json",
    output:
        correctness="results/baselines/{impl}/correctness.json",
        correctness_md="results/baselines/{impl}/correctness.md",
        csv="results/baselines/{impl}/bench.csv",
        samples="results/baselines/{impl}/bench_samples.csv",
        meta="results/baselines/{impl}/bench.json",
    log:
        "results/logs/baselines/{impl}.log",
    wildcard_constraints:
        impl="eager|compile",
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/baseline.py"
