rule profile:
    """Every config class in one profiled child: under Nsight Compute (NVTX ranges per class), else torch.profiler."""
    input:
        settings=SETTINGS["profile"],
        kernel=kernel_of,
        sources=sources_of,
        builds=builds_of,
        ref=REF,
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
