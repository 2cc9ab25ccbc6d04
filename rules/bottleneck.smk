rule bottleneck:
    """Roofline per config and the bottleneck per config class, with next directions."""
    input:
        settings=SETTINGS["bottleneck"],
        profile="results/{version}/profile",
        bench="results/{version}/bench.csv",
        hardware=HARDWARE_JSON,
    output:
        json="results/{version}/bottleneck.json",
    log:
        "results/logs/{version}/bottleneck.log",
    benchmark:
        "results/benchmarks/{version}/bottleneck.tsv"
    conda:
        "../envs/kopt.yaml"
    script:
        "../scripts/bottleneck_rule.py"
