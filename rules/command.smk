# A target of kind command (kopt/workspace/command.py): each version is a commit, or a patch on its
# parent's, of a git repository, judged by one fixed benchmark command. These rules make the same
# files as the Triton/CUDA rules, so bottleneck, compare and the reports serve both. The command
# runs in the version's worktree (build's output), one run at a time (a lock beside it).


rule build:
    """The version's own git worktree: its commit, or its parent's commit with the patch applied."""
    input:
        unpack(command_sources),
        owner="results/workspace.json",
        meta=meta_of,
        target=ws_file("target.yaml"),
    output:
        build=directory("results/{version}/build"),
    log:
        "results/logs/{version}/build.log",
    benchmark:
        "results/benchmarks/{version}/build.tsv"
    conda:
        "../envs/kopt.yaml"
    params:
        commit=resolved_commit,
    script:
        "../scripts/command.py"


rule correctness:
    """The command once in the worktree: exit code, its CSV, and every error column passing per config."""
    input:
        settings=SETTINGS["run"],
        build="results/{version}/build",
        target=ws_file("target.yaml"),
    output:
        json="results/{version}/correctness.json",
        md="results/{version}/correctness.md",
        runs=directory("results/{version}/command_runs/correctness"),
    log:
        "results/logs/{version}/correctness.log",
    benchmark:
        "results/benchmarks/{version}/correctness.tsv"
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/command.py"


rule bench:
    """The command `repeats` times (its time column) and once under Nsight Compute (the kernel's GPU time)."""
    input:
        settings=SETTINGS["profile"],
        build="results/{version}/build",
        target=ws_file("target.yaml"),
        correctness="results/{version}/correctness.json",
    output:
        csv="results/{version}/bench.csv",
        samples="results/{version}/bench_samples.csv",
        meta="results/{version}/bench.json",
        runs=directory("results/{version}/command_runs/bench"),
    log:
        "results/logs/{version}/bench.log",
    benchmark:
        "results/benchmarks/{version}/bench.tsv"
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/command.py"


rule profile:
    """The command once under Nsight Compute with its sections: the target kernel's launches per class."""
    input:
        settings=SETTINGS["profile"],
        build="results/{version}/build",
        target=ws_file("target.yaml"),
        correctness="results/{version}/correctness.json",
    output:
        profile=directory("results/{version}/profile"),
    log:
        "results/logs/{version}/profile.log",
    benchmark:
        "results/benchmarks/{version}/profile.tsv"
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/command.py"
