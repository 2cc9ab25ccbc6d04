rule env_check:
    """What this machine is: GPU, driver, CUDA/ROCm, torch, triton, Snakemake, profilers, clocks."""
    input:
        settings=SETTINGS["run"],
    output:
        json="results/env_check.json",
        md="results/env_check.md",
    log:
        "results/logs/env_check.log",
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/env_check.py"


rule reports:
    """performance.md, final_report.md, benchmark.md and the plots, from result files alone."""
    input:
        settings=SETTINGS["report"],
        env="results/env_check.json",
        experience="results/experience.sqlite",
        ref=REF,
        target=ws_file("target.yaml"),
        hardware=HARDWARE_JSON,
        baselines=BASELINE_FILES,
        compare=expand("results/{version}/compare.json", version=VERSIONS),
        bench=expand("results/{version}/bench.csv", version=VERSIONS),
        bottleneck=expand("results/{version}/bottleneck.json", version=VERSIONS),
        profile=expand("results/{version}/profile", version=VERSIONS),
        state="results/state.json",  # the next step the final report names
        meta=[str(v.meta_path) for v in WS.versions],
        kernels=[str(v.kernel) for v in WS.versions],
    output:
        performance=report(
            "results/performance.md",
            caption="../report/performance.rst",
            category="Reports",
        ),
        final=report(
            "results/final_report.md",
            caption="../report/final.rst",
            category="Reports",
        ),
        benchmark=report(
            "results/benchmark.md",
            caption="../report/benchmark.rst",
            category="Reports",
        ),
        plots=report(
            directory("results/plots"),
            patterns=["{name}.png"],
            caption="../report/plots.rst",
            category="Plots",
        ),
    log:
        "results/logs/reports.log",
    conda:
        "../envs/kopt.yaml"
    script:
        "../scripts/reports.py"
