"""Print the graph's own overhead: a no-op rerun of a finished graph, and planning 100 versions.

    python benchmarks/graph_overhead.py [--results-from results]

1. `snakemake --cores 1 results/vLAST/compare.json` on the finished graph in this checkout (run
   the graph first): the time of the second run, which must do nothing (target: under 3 s).
2. A temporary workspace with 100 versions (copies of the example's v1): `snakemake -n` on it
   (target: plans in under 5 s).
"""

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(cmd, cwd) -> tuple[float, str]:
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{p.stdout}\n{p.stderr}")
    return dt, p.stdout + p.stderr


FLOOR_SNAKEFILE = """
rule all:
    input: "done.txt"

rule make:
    output: "done.txt"
    log: "make.log"
    shell: "echo done > {output} 2> {log}"
"""


def main() -> None:
    sm = [sys.executable, "-m", "snakemake", "--cores", "1"]
    with tempfile.TemporaryDirectory() as tmp:  # Snakemake's own floor on this machine
        (Path(tmp) / "Snakefile").write_text(FLOOR_SNAKEFILE)
        timed(sm, tmp)
        dt, _ = timed(sm, tmp)
        print(f"floor: no-op rerun of a one-rule workflow: {dt:.2f} s (Snakemake's own start-up here)")
    dt, out = timed(sm, ROOT)
    nothing = "Nothing to be done" in out
    print(f"no-op rerun of the finished graph: {dt:.2f} s (nothing to be done: {nothing}; target < 3 s)")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        shutil.copytree(ROOT / "examples" / "softmax", ws)
        first = 1 + max(int(p.stem[1:]) for p in (ws / "kernels").glob("v*.yaml"))
        for i in range(first, 100):
            shutil.copy(ws / "kernels" / "v1.py", ws / "kernels" / f"v{i}.py")
            (ws / "kernels" / f"v{i}.yaml").write_text(
                f"parent: v1\nhypothesis: copy {i}\nrationale: planning cost\nexpected: a tie\n"
            )
        dt, out = timed(sm + ["-d", str(Path(tmp) / "run"), "-n", "--config", f"workspace={ws}"], ROOT)
        jobs = next((line for line in out.splitlines() if line.strip().startswith("total")), "?")
        print(f"snakemake -n with 100 versions: {dt:.2f} s ({jobs.strip()}; target < 5 s)")


if __name__ == "__main__":
    main()
