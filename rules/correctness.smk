rule reference:
    """ref.py alone, before any version: it imports, and setup() and reference() run on every config."""
    input:
        fresh=rebuilt_if_stale("results/reference.json"),
        settings=SETTINGS["run"],
        owner="results/workspace.json",
        ref=REF,
        target=ws_file("target.yaml"),
    output:
        json="results/reference.json",
    log:
        "results/logs/reference.log",
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/reference.py"


rule correctness:
    """The correctness gate: every config, fresh seeds, float64 reference, poisoned outputs."""
    input:
        fresh=rebuilt_if_stale("results/{version}/correctness.json"),
        settings=SETTINGS["run"],
        kernel=kernel_of,
        sources=sources_of,
        builds=builds_of,
        ref=REF,
        target=ws_file("target.yaml"),
        reference="results/reference.json",
    output:
        json="results/{version}/correctness.json",
        md="results/{version}/correctness.md",
    log:
        "results/logs/{version}/correctness.log",
    benchmark:
        "results/benchmarks/{version}/correctness.tsv"
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/correctness.py"
