# kernel-opt: the version graph. `snakemake --cores 1 results/v3/compare.json` builds, for every
# version up to v3, correctness.{md,json}, bench.csv, profile/, bottleneck.json and compare.json,
# and results/hardware/<gpu>.json once per GPU. See README.md.


include: "rules/common.smk"
include: "rules/settings.smk"


if WS.command is None:  # Triton, CUDA and HIP versions, judged against ref.py

    include: "rules/build.smk"
    include: "rules/correctness.smk"
    include: "rules/measure.smk"
    include: "rules/baseline.smk"

else:  # a target of kind command: commits judged by a fixed benchmark command

    include: "rules/command.smk"


include: "rules/hardware.smk"
include: "rules/recorded.smk"
include: "rules/bottleneck.smk"
include: "rules/compare.smk"
include: "rules/experience.smk"
include: "rules/report.smk"


report: "report/workflow.rst"


rule all:
    default_target: True
    input:
        f"results/{LAST}/compare.json",
        "results/state.json",
        "results/env_check.md",
        "results/performance.md",


# The run's end: each compared version's verdict in one line and where to read why; a run whose
# versions include no correct baseline exits non-zero (kopt.report.verdicts).
onsuccess:
    import sys
    from pathlib import Path
    from kopt.report.verdicts import end_of_run

    status = end_of_run(Path("results").resolve())
    if status:
        sys.exit(status)


onerror:
    from pathlib import Path
    from kopt.report.verdicts import verdict_lines

    print("\n".join(verdict_lines(Path("results").resolve())))
