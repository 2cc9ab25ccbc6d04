rule compare:
    """Keep or discard against the best so far: the fold over all earlier versions' decisions. It
    reads no profile: the decision is written before the version is profiled (rule `profile`).
    """
    input:
        unpack(previous_compare),
        unpack(parent_files),
        fresh=rebuilt_if_stale("results/{version}/compare.json"),
        settings=SETTINGS["decide"],
        kernel=kernel_of,
        sources=sources_of,
        meta=meta_of,
        ref=REF,
        target=ws_file("target.yaml"),
        correctness="results/{version}/correctness.json",
        bench="results/{version}/bench.csv",
        bench_meta="results/{version}/bench.json",
        recorded="results/{version}/recorded",
    output:
        json="results/{version}/compare.json",
    log:
        "results/logs/{version}/compare.log",
    benchmark:
        "results/benchmarks/{version}/compare.tsv"
    conda:
        "../envs/kopt.yaml"
    params:
        parent=lambda w: WS.version(w.version).parent,
    script:
        "../scripts/compare.py"


rule state:
    """The loop state after the last version: best, counters, repairs, stop flag and reason."""
    input:
        compare=expand("results/{version}/compare.json", version=VERSIONS),
        bench=expand("results/{version}/bench.csv", version=VERSIONS),
        bottleneck=expand("results/{version}/bottleneck.json", version=VERSIONS),
        drafts=[f"{WS.root}/kernels/{d}.yaml" for d in WS.drafts],
    output:
        json="results/state.json",
    log:
        "results/logs/state.log",
    conda:
        "../envs/kopt.yaml"
    params:
        can_split=WS.command is None,  # a command target cannot dispatch
    script:
        "../scripts/state.py"
