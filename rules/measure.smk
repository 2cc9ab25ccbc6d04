rule measure:
    """A version's gate and timing on its GPU in one job: one child runs the correctness gate
    (every config, fresh seeds, float64 reference, poisoned outputs), then, only when every config
    passed, the timing per config, the clock and the bound. The decision needs nothing more. On the
    CPU (no profiler) the child's kernel process profiles after its bench too, from the bench's own
    calls, kept in bench.json for rule `profile`.
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
    log:
        "results/logs/{version}/measure.log",
    benchmark:
        "results/benchmarks/{version}/measure.tsv"
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/measure.py"


rule profile:
    """Every class of a version that passed its gate, profiled after its decision (rule `compare`
    does not wait for it): its largest config under Nsight Compute (NVTX ranges per class, else
    torch.profiler), behind the GPU gate; on the CPU the record rule `measure` kept.
    """
    input:
        fresh=rebuilt_if_stale("results/{version}/profile/profile.json"),
        settings=SETTINGS["profile"],
        kernel=kernel_of,
        sources=sources_of,
        builds=builds_of,
        ref=REF,
        target=ws_file("target.yaml"),
        correctness="results/{version}/correctness.json",
        bench_meta="results/{version}/bench.json",
    output:
        profile=directory("results/{version}/profile"),
        asm=directory("results/{version}/asm"),
    log:
        "results/logs/{version}/profile.log",
    benchmark:
        "results/benchmarks/{version}/profile.tsv"
    priority: -1  # after the decisions, which read no profile (rule compare)
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/profile_rule.py"
