rule profile:
    """Every config class in one profiled child: under Nsight Compute (NVTX ranges per class), else torch.profiler."""
    input:
        settings=SETTINGS["profile"],
        kernel=kernel_of,
        sources=sources_of,
        builds=builds_of,
        ref=ws_file("ref.py"),
        target=ws_file("target.yaml"),
        correctness="results/{version}/correctness.json",
    output:
        profile=directory("results/{version}/profile"),
        asm=directory("results/{version}/asm"),
    log:
        "results/logs/{version}/profile.log",
    benchmark:
        "results/benchmarks/{version}/profile.tsv"
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/profile_rule.py"


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
