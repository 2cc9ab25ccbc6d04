rule build:
    """A CUDA (.cu) or HIP (.hip) version compiled into a shared library: compiler log, ptxas resources, SASS."""
    input:
        settings=SETTINGS["build"],
        owner="results/workspace.json",  # whose tree this is, written before any version's folder
        kernel=kernel_of,
        headers=headers_of,  # its local #include "..." files
    output:
        build=directory("results/{version}/build"),
    log:
        "results/logs/{version}/build.log",
    benchmark:
        "results/benchmarks/{version}/build.tsv"
    conda:
        "../envs/kopt.yaml"
    script:
        "../scripts/build.py"
