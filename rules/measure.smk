rule measure:
    """A version on its GPU in one job. One child runs the correctness gate (every config, fresh
    seeds, float64 reference, poisoned outputs), then, only when every config passed, the timing per
    config; a second profiles every class (under Nsight Compute, NVTX ranges per class, else
    torch.profiler). Both start together; the second waits, off the GPU, until the first has ended.
    On the CPU (no profiler), the first child's kernel process profiles after its bench instead,
    from the bench's own calls.
    """
    input:
        fresh=rebuilt_if_stale("results/{version}/correctness.json"),
        fresh_bench=rebuilt_if_stale("results/{version}/bench.json"),
        settings=SETTINGS["bench"],
        profile_settings=SETTINGS["profile"],
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
        profile=directory("results/{version}/profile"),
        asm=directory("results/{version}/asm"),
    log:
        check="results/logs/{version}/measure.log",
        profile="results/logs/{version}/profile.log",
    benchmark:
        "results/benchmarks/{version}/measure.tsv"
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/measure.py"
