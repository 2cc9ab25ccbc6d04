rule hardware:
    """Ceilings of this GPU (copy bandwidth, matmul per dtype), measured once and reused."""
    input:
        settings=SETTINGS["hardware"],
        registry=REGISTRY,
    output:
        json=HARDWARE_JSON,
    log:
        f"results/logs/hardware/{slug(GPU)}.log",
    conda:
        "../envs/kopt.yaml"
    resources:
        gpu=1,
    script:
        "../scripts/hardware.py"
