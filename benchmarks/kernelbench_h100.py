"""KernelBench problems of levels 1-3 (at KernelBench's own sizes) and gpu-mode problems (at their
benchmarks' sizes), each with a Triton version, through kernel-opt's whole graph: per problem `kopt
init --kernelbench FILE` or `kopt init --gpumode DIR` writes a workspace (v0: torch eager, or the
problem's own submission.py), the Triton solution becomes v1 as it is, and Snakemake builds
`results/v1/compare.json` (gate, timing, profile, bottleneck, decision) in a results tree of its
own. The problems are KernelBench's files in tests/fixtures/kernelbench/ and gpu-mode's folders in
tests/fixtures/gpumode/, the solutions in benchmarks/kernelbench_h100/ (SOURCE.md there says where
from).

On the GPU machine (snakemake from the wheels, the repo on PYTHONPATH):

    source benchmarks/gpu_env.sh && python3 benchmarks/kernelbench_h100.py --runs runs/kernelbench_h100

On a machine without a GPU it runs the same graph through the Triton interpreter on the CPU
configs `kopt init` derives (automatic, or `--cpu`): a check, not performance. `--gate-only`: only
`kopt init` and the correctness gate of v0 and v1, without Snakemake (seconds per problem).

Writes RUNS/table.md and RUNS/table.csv: per problem the wall seconds, Snakemake's exit code, v0's
and v1's correctness, their GPU time per config (bench.csv `gpu_us`, Nsight Compute's, or
`profiler_us`; the events' median `median_us` beside it), the decision of results/v1/compare.json,
and for a problem that failed its one-line reason. A failing problem never stops the others; the
table is rewritten after each problem, so a run cut short leaves the rows it finished.

The hardware ceilings (rule `hardware`, once per GPU) and the settings files are made in the first
problem's tree and copied, modification times kept, into the others' before they run, so Snakemake
keeps them (`--no-share`: every tree makes its own).
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = ROOT / "tests" / "fixtures" / "kernelbench"  # the problems, verbatim (SOURCE.md there)
GPUMODE = ROOT / "tests" / "fixtures" / "gpumode"  # gpu-mode problems' folders (SOURCE.md there)
# short name -> (format, the problem: a KernelBench file as level/name.py, or a gpu-mode folder under
# GPUMODE; its Triton version, under ROOT), in the order they run
SOLUTION = "benchmarks/kernelbench_h100/{name}/triton_v1.py"
CHOSEN = {
    "relu": ("kernelbench", "level1/19_ReLU.py"),
    "gelu": ("kernelbench", "level1/26_GELU_.py"),
    "softmax": ("kernelbench", "level1/23_Softmax.py"),
    "layernorm": ("kernelbench", "level1/40_LayerNorm.py"),
    "rmsnorm": ("kernelbench", "level1/36_RMSNorm_.py"),
    "sum_reduction": ("kernelbench", "level1/47_Sum_reduction_over_a_dimension.py"),
    "argmax": ("kernelbench", "level1/51_Argmax_over_a_dimension.py"),
    "matmul": ("kernelbench", "level1/1_Square_matrix_multiplication_.py"),
    "gemm_add_relu": ("kernelbench", "level2/76_Gemm_Add_ReLU.py"),
    "gemm_relu_divide": ("kernelbench", "level2/63_Gemm_ReLU_Divide.py"),
    "mlp": ("kernelbench", "level3/1_MLP.py"),
    "mingpt_attention": ("kernelbench", "level3/43_MinGPTCausalAttention.py"),
    "vectoradd": ("gpumode", "pmpp_v2/vectoradd_py", "tests/fixtures/gpumode/pmpp_v2/vectoradd_py/solutions/submission_triton.py"),
    "grayscale": ("gpumode", "pmpp_v2/grayscale_py"),
}  # fmt: skip
ORDER = list(CHOSEN)
# across levels and formats (issue 43, point 8): the default run
ACROSS = "mlp,mingpt_attention,grayscale,vectoradd,softmax,layernorm,matmul,argmax,gemm_add_relu,gemm_relu_divide"


V1_META = """parent: v0
hypothesis: {hypothesis}
rationale: "A Triton version of this problem at its own sizes ({path}), as it is."
expected: "Faster than torch eager where eager makes extra passes over memory or under-fills the GPU; a tie where eager is already at the memory bandwidth."
target_class: all
"""


def say(msg: str) -> None:
    print(msg, flush=True)


def hypothesis_of(src: Path) -> str:
    """The solution's docstring, its second paragraph (what the kernel does), as one line; a file
    without one: its name."""
    parts = src.read_text().split('"""')
    if len(parts) < 3:
        return json.dumps(f"The Triton solution {src.name}, as it is")
    doc = parts[1]
    paras = [" ".join(p.split()) for p in doc.strip().split("\n\n")]
    return json.dumps(paras[1] if len(paras) > 1 else paras[0])  # a quoted YAML scalar


def problem_source(name: str) -> Path:
    fmt, source = CHOSEN[name][:2]
    return FILES / Path(source).name if fmt == "kernelbench" else GPUMODE / source


def solution(name: str) -> Path:
    return ROOT / (CHOSEN[name][2] if len(CHOSEN[name]) > 2 else SOLUTION.format(name=name))


def make_workspace(name: str, ws: Path) -> tuple[bool, str]:
    """`kopt init`, then the Triton solution as kernels/v1.py with its v1.yaml. A KernelBench problem
    goes in under its file name (kopt names the workspace, and the reports' kernel type, after the
    file's stem: `problem` for every one otherwise); a gpu-mode folder as it is."""
    fmt, src = CHOSEN[name][0], problem_source(name)
    if fmt == "kernelbench":
        src = Path(shutil.copyfile(src, ws.parent / src.name))
    p = subprocess.run(
        [sys.executable, "-m", "kopt.cli", "init", str(ws), f"--{fmt}", str(src)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    (ws.parent / "init.log").write_text(p.stdout + p.stderr)
    if p.returncode != 0:
        return False, one_line(p.stderr or p.stdout) or f"kopt init exit {p.returncode}"
    src = solution(name)
    shutil.copyfile(src, ws / "kernels" / "v1.py")  # the solution as it is
    (ws / "kernels" / "v1.yaml").write_text(V1_META.format(hypothesis=hypothesis_of(src), path=src.relative_to(ROOT)))
    return True, ""


def one_line(text: str, n: int = 300) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " ".join((lines[-1] if lines else "").split())[:n]


def share_results(src_results: Path | None, dst_results: Path) -> None:
    """The ceilings measured in an earlier tree and its settings files, modification times kept
    (the ceilings after their settings), so Snakemake reruns neither: each settings rule takes about
    2 s on the H100 machine, seven of them per tree. The settings hold config values only, the same
    for every problem; one that differs (kopt compares them while the DAG is built) is rewritten."""
    if src_results is None:
        return
    (dst_results / "settings").mkdir(parents=True, exist_ok=True)
    for s in (src_results / "settings").glob("*.json"):
        shutil.copy2(s, dst_results / "settings" / s.name)
    if (src_results / "hardware").is_dir():
        shutil.copytree(
            src_results / "hardware", dst_results / "hardware", dirs_exist_ok=True, copy_function=shutil.copy2
        )
    st = dst_results / "settings" / "hardware.json"
    if st.is_file():
        t = st.stat().st_mtime + 1
        for h in (dst_results / "hardware").glob("*.json"):
            os.utime(h, (t, t))


def run_graph(run_dir: Path, ws: Path, cpu: bool, timeout_s: float, extra: list[str]) -> tuple[int | str, float, str]:
    """Snakemake up to results/v1/compare.json in run_dir; (exit code or 'timeout', seconds, log)."""
    cmd = [sys.executable, "-m", "snakemake", "--cores", "1", "-d", str(run_dir), "results/v1/compare.json", *extra]
    cmd += ["--config", f"workspace={ws}"] + (["device=cpu"] if cpu else [])
    log = run_dir / "snakemake.log"
    t0 = time.perf_counter()
    with open(log, "w") as f:
        f.write("$ " + " ".join(cmd) + "\n")
        f.flush()
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc: int | str = p.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGTERM)  # Snakemake and the jobs it started (its own session)
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
            rc = "timeout"
    return rc, time.perf_counter() - t0, log.read_text(errors="replace")


def read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def read_bench(path: Path) -> list[dict]:
    try:
        with open(path) as f:
            return list(csv.DictReader(f))
    except OSError:
        return []


def fmt_us(x: str | None) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return ""
    return "" if v != v else f"{v:.1f}"


def why_failed(rc, timeout_s: float, log: str, corr: dict[str, dict], run_dir: Path) -> str:
    """One line: what stopped the problem (empty when nothing did)."""
    for v in ("v0", "v1"):
        c = corr.get(v) or {}
        if c and c.get("status") != "pass":
            return f"{v} {c.get('status')}: {' '.join(str(c.get('error') or '').split())[:250]}"
    if rc == 0:
        return ""
    if rc == "timeout":
        rules = re.findall(r"^(?:local)?rule (\w+):", log, flags=re.M)
        return f"timed out after {timeout_s:.0f} s (last rule started: {rules[-1] if rules else 'none'})"
    kopt = [ln.strip() for ln in log.splitlines() if ln.strip().startswith("kopt:")]
    if kopt:
        return " ".join(kopt[0].split())[:300]
    m = re.search(r"^Error in rule (\w+):", log, flags=re.M)
    if m:
        logs = re.findall(r"log: (\S+)", log[m.start() :])
        tail = ""
        if logs:
            with contextlib.suppress(OSError):
                tail = one_line((run_dir / logs[0]).read_text(errors="replace"))
        return f"error in rule {m.group(1)}: {tail}"[:300]
    return one_line(log) or f"exit {rc}"


def gpu_col(rows: list[dict]) -> str:
    """The GPU time's column: Nsight Compute's outside clock (`gpu_us`) where it ran, else the
    profiler's (`profiler_us`)."""
    for col in ("gpu_us", "profiler_us"):
        if any(fmt_us(r.get(col)) for r in rows):
            return col
    return "gpu_us"


def result_row(name: str, run_dir: Path, rc, secs: float, timeout_s: float, log: str) -> dict:
    res = run_dir / "results"
    corr = {v: read_json(res / v / "correctness.json") for v in ("v0", "v1")}
    bench = {v: read_bench(res / v / "bench.csv") for v in ("v0", "v1")}
    cmp_ = read_json(res / "v1" / "compare.json")
    configs = [r.get("config_key", "") for r in bench["v0"] or bench["v1"]]
    col = {v: gpu_col(bench[v]) for v in bench}

    def per_config(v: str, c: str) -> str:
        return "; ".join(fmt_us(r.get(c)) for r in bench[v])

    speed = []
    for a, b in zip(bench["v0"], bench["v1"], strict=False):
        try:
            speed.append(f"{float(a[col['v0']]) / float(b[col['v1']]):.2f}")
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            speed.append("")
    launches = " / ".join(
        ";".join(f"{float(r['gpu_launches']):g}" for r in bench[v] if fmt_us(r.get("gpu_launches")))
        for v in ("v0", "v1")
    )
    clock = "; ".join(sorted({r.get("clock") or r.get("method") or "" for r in bench["v1"]} - {""}))
    reason = str(cmp_.get("detail") or cmp_.get("reason") or "")
    notes = [c.get("note") for c in cmp_.get("per_class") or [] if c.get("verdict") == "disputed" and c.get("note")]
    if notes:  # the numbers behind a dispute, short
        m = re.search(r"GPU time ([-+][\d.]+) us, the judge's wall time per call ([-+][\d.]+) us", notes[0])
        reason = f"disputed: GPU time {m.group(1)} us but the judge's wall per call {m.group(2)} us" if m else notes[0]
    return {
        "problem": name,
        "config": "; ".join(configs),
        "wall_s": round(secs, 1),
        "exit": rc,
        "v0": corr["v0"].get("status", ""),
        "v1": corr["v1"].get("status", ""),
        "v0_gpu_us": per_config("v0", col["v0"]),
        "v1_gpu_us": per_config("v1", col["v1"]),
        "speedup": "; ".join(speed),
        "v0_events_us": per_config("v0", "median_us"),
        "v1_events_us": per_config("v1", "median_us"),
        "launches": launches if launches != " / " else "",
        "clock": clock,
        "decision": cmp_.get("decision", ""),
        "reason": " ".join(reason.split())[:240],
        "why": why_failed(rc, timeout_s, log, corr, run_dir),
    }


def gate_row(name: str, run_dir: Path, ws: Path, secs0: float) -> dict:
    """--gate-only: the correctness gate of v0 and v1 on the CPU configs, without Snakemake."""
    sys.path.insert(0, str(ROOT))
    from kopt.steps.bench import check_then_time  # only this mode imports kopt here

    params = {
        "device": "cpu",
        "timeout_s": 300,
        "bench": {"warmup_ms": 10, "rep_ms": 20, "min_samples": 10, "max_samples": 50, "flush_l2": True},
    }
    t0, corr = time.perf_counter(), {}
    for v in ("v0", "v1"):
        out = run_dir / "gate" / v
        try:
            corr[v], _ = check_then_time(
                out, version=v, target=str(ws / "target.yaml"), kernel=str(ws / "kernels" / f"{v}.py"),
                log=str(out / "steps.log"), params=params, time=False,
            )  # fmt: skip
        except Exception as e:  # noqa: BLE001 - one problem's failure is a row
            corr[v] = {"status": "error", "error": f"{type(e).__name__}: {e}"}
    import yaml

    cpu_cfg = yaml.safe_load((ws / "target.yaml").read_text())["cpu_configs"]
    return {
        "problem": name,
        "config": "; ".join(",".join(f"{k}={v}" for k, v in c.items()) for c in cpu_cfg),
        "wall_s": round(secs0 + time.perf_counter() - t0, 1),
        "exit": "",
        "v0": corr["v0"].get("status", ""),
        "v1": corr["v1"].get("status", ""),
        "why": why_failed(0, 0, "", corr, run_dir),
    }


def to_markdown(rows: list[dict]) -> str:
    cols = list(rows[0])
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in rows:
        out.append("| " + " | ".join(str(r[c]).replace("|", "/") for c in cols) + " |")
    return "\n".join(out) + "\n"


def write_table(rows: list[dict], runs: Path, label: str, gate_only: bool, total: float) -> str:
    """RUNS/table.md and RUNS/table.csv of the rows so far; the markdown."""
    cols = list(max(rows, key=len)) if rows else []
    rows = [{c: r.get(c, "") for c in cols} for r in rows]
    head = (
        f"# KernelBench and gpu-mode on kernel-opt: {label}\n\n{len(rows)} problems, {total:.0f} s in all "
        f"({'gate only' if gate_only else 'results/v1/compare.json per problem'}); runs in {runs}.\n"
        "GPU times: bench.csv's `gpu_us` (Nsight Compute's GPU time per call, read outside the kernel's process; "
        "`profiler_us` where that clock did not run), events: the CUDA events' median (`median_us`); "
        "speedup = v0 / v1 GPU time; launches: kernel launches per call (v0 / v1).\n\n"
    )
    md = head + (to_markdown(rows) if rows else "")
    (runs / "table.md").write_text(md)
    with open(runs / "table.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)
    return md


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--runs", type=Path, default=ROOT / "runs" / "kernelbench_h100", help="one folder per problem")
    ap.add_argument("--only", default=ACROSS, help=f"comma-separated short names, or all (default: {ACROSS})")
    ap.add_argument("--cpu", action="store_true", help="the Triton interpreter on the CPU (automatic without a GPU)")
    ap.add_argument("--gate-only", action="store_true", help="kopt init and the gate of v0 and v1 only (CPU)")
    ap.add_argument("--timeout", type=float, default=240.0, help="seconds per problem's Snakemake run")
    ap.add_argument(
        "--budget", type=float, default=0.0, help="stop starting problems after this many seconds (0: no limit)"
    )
    ap.add_argument("--no-share", action="store_true", help="measure the ceilings and write the settings in every tree")
    ap.add_argument("--snakemake-args", default="", help="extra Snakemake arguments, one string")
    a = ap.parse_args()

    names = ORDER if a.only == "all" else [n for n in a.only.split(",") if n]
    unknown = [n for n in names if n not in CHOSEN or not (problem_source(n).exists() and solution(n).is_file())]
    if unknown:
        ap.error(f"no problem or no solution for {unknown} (have {ORDER})")
    cpu = a.cpu or a.gate_only
    if not cpu:
        import torch

        cpu = not torch.cuda.is_available()
        if cpu:
            say("no GPU seen by torch: the Triton interpreter on the CPU configs (not performance)")
    label = "CPU-interpreter (correctness and plumbing only, not performance)" if cpu else "GPU"
    runs = a.runs.resolve()
    runs.mkdir(parents=True, exist_ok=True)
    extra = a.snakemake_args.split()
    rows, shared, t_all = [], None, time.perf_counter()
    for i, name in enumerate(names, 1):
        run_dir, tag = runs / name, f"[{i}/{len(names)}] {name}"
        if a.budget and time.perf_counter() - t_all > a.budget:
            say(f"{tag}: not started (past the --budget of {a.budget:.0f} s)")
            rows.append({"problem": name, "why": f"not started: past --budget {a.budget:.0f} s"})
            continue
        shutil.rmtree(run_dir, ignore_errors=True)
        run_dir.mkdir(parents=True)
        ws = run_dir / "ws"
        t0 = time.perf_counter()
        ok, why = make_workspace(name, ws)
        say(f"{tag}: kopt init {'ok' if ok else 'FAILED: ' + why} ({time.perf_counter() - t0:.1f} s)")
        if not ok:
            rows.append({"problem": name, "wall_s": round(time.perf_counter() - t0, 1), "exit": "init", "why": why})
            continue
        if a.gate_only:
            rows.append(gate_row(name, run_dir, ws, time.perf_counter() - t0))
            r = rows[-1]
            say(f"{tag}: gate v0 {r['v0']}, v1 {r['v1']} ({r['wall_s']} s) {r['why']}")
            continue
        if not a.no_share:
            share_results(shared, run_dir / "results")
        say(f"{tag}: snakemake results/v1/compare.json (log {run_dir / 'snakemake.log'})")
        rc, secs, log = run_graph(run_dir, ws, cpu, a.timeout, extra)
        row = result_row(name, run_dir, rc, time.perf_counter() - t0, a.timeout, log)
        rows.append(row)
        if shared is None and any((run_dir / "results" / "hardware").glob("*.json")):
            shared = run_dir / "results"
        say(
            f"{tag}: exit {rc} in {secs:.1f} s; v0 {row['v0'] or '-'} {row['v0_gpu_us'] or '-'} us, "
            f"v1 {row['v1'] or '-'} {row['v1_gpu_us'] or '-'} us, decision {row['decision'] or '-'}"
            + (f"; {row['why']}" if row["why"] else "")
        )
        write_table(rows, runs, label, a.gate_only, time.perf_counter() - t_all)
    md = write_table(rows, runs, label, a.gate_only, time.perf_counter() - t_all)
    say("\n" + md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
