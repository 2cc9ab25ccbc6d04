rule experience:
    """The project's experience store, rebuilt from the comparisons (plus an opt-in store to learn from)."""
    input:
        compare=expand("results/{version}/compare.json", version=VERSIONS),
        # each entry's bottleneck is its parent's (kopt.loop.experience.parent_bottleneck)
        bottleneck=expand("results/{version}/bottleneck.json", version=VERSIONS),
        imported=config["experience_import"] or [],
    output:
        db="results/experience.sqlite",
    log:
        "results/logs/experience.log",
    conda:
        "../envs/kopt.yaml"
    script:
        "../scripts/experience.py"
