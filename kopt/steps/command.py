"""Rules of rules/command.smk: a target of kind command (kopt.workspace.command), each version a
commit or a patch judged by one fixed benchmark command. ``build`` makes the version's worktree
(kopt.steps.worktree); ``correctness`` runs the command once (exit code, CSV, error columns);
``bench`` runs it ``repeats`` times and once under Nsight Compute or rocprofv3 for the target
kernel's GPU time per launch, the clock that decides; ``profile`` runs it under Nsight Compute
with its sections.
"""

from __future__ import annotations

import json
import platform
import re
import shlex
import shutil
import time
from importlib import metadata
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from kopt.loop.gate import GateTimeout, acquire, ended
from kopt.profilers import command_csv, ncu, rocprof
from kopt.profilers.gpus import detect_gpu
from kopt.report.render import render
from kopt.steps.common import config_cells, write_json
from kopt.steps.correctness import STATUS_WORDS
from kopt.steps.profile import choose_backend, kernel_resources
from kopt.steps.worktree import CommandError, Run, make_worktree, restore_fixed, run_command
from kopt.workspace.command import version_source
from kopt.workspace.provenance import hashes, library_versions, now, sha256_file
from kopt.workspace.records import BENCH_COLUMNS
from kopt.workspace.target import WorkspaceError, load_workspace

# a benchmark command may launch its kernel thousands of times (do_bench): the profile with all
# sections replays only the first ones (each replay costs milliseconds); the timing run sees all
PROFILED_LAUNCHES = 20


# --- the rules of rules/command.smk ----------------------------------------------------------


def _workspace(target: str):

    return load_workspace(Path(target).parent, versions=False)


def build(*, version: str, target: str, meta: str, parent_build: str | None, baseline_build: str | None, out_dir: str):
    """Rule `build`: the version's worktree under ``out_dir``/worktree, its fixed paths restored from
    v0's commit (``baseline_build``; v0 is its own), and build.json (its commit)."""
    ws, out, meta_path = _workspace(target), Path(out_dir), Path(meta)
    source = version_source(yaml.safe_load(meta_path.read_text()), meta_path, int(version[1:]))
    parent = json.loads((Path(parent_build) / "build.json").read_text()) if parent_build else {}
    baseline = json.loads((Path(baseline_build) / "build.json").read_text()) if baseline_build else None
    doc = _build_doc(version, meta, sha256_file(meta_path))
    t0 = time.perf_counter()
    try:
        if source.patch is not None and parent.get("status") != "ok":
            raise CommandError(f"{meta}: patch: its parent {source.parent} has no commit ({parent.get('error')})")
        if baseline is not None and baseline.get("status") != "ok":
            raise CommandError(f"{meta}: fixed_paths: v0 has no commit to take them from ({baseline.get('error')})")
        doc.update(make_worktree(ws.command.repository, out / "worktree", source, parent.get("commit"), meta_path))
        fixed_from = (baseline or doc)["commit"]
        doc["fixed_sha256"] = restore_fixed(
            ws.command.repository, out / "worktree", ws.command.fixed_paths, fixed_from, meta_path
        )
        doc["status"] = "ok"
    except CommandError as e:
        doc["error"] = str(e)
    doc.update(
        seconds=round(time.perf_counter() - t0, 2), provenance={"kernel_sha256": doc.pop("_sha"), "created": now()}
    )
    print(f"{version}: build {doc['status']}: {doc['error'] or doc['commit']}")
    write_json(out / "build.json", doc)
    return doc


def _build_doc(version: str, meta: str, sha: str) -> dict:
    """build.json of a command version before it is built (kopt.workspace.records.Build)."""
    empty = dict.fromkeys(("error", "compiler", "arch", "arch_from", "command", "library", "sass", "commit"))
    return {"version": version, "kernel": meta, "status": "failed", **empty, "solve": [], "kernels": [], "_sha": sha}


def _runs(ws, build_doc: dict, settings: dict, log: str, repeats: int, keep: Path) -> tuple[list[Run], dict]:
    """The command ``repeats`` times in the version's worktree, behind the GPU gate; each run's
    CSVs (joined into one) kept as ``keep``/run<i>.csv. (runs, gate record)"""
    env, gate = acquire(settings.get("gate"), settings.get("device", "auto"))
    wt = Path(build_doc["worktree"])
    shutil.rmtree(keep, ignore_errors=True)
    keep.mkdir(parents=True)
    runs = []
    for i in range(repeats):
        runs.append(run_command(ws.command, wt, Path(log), settings["timeout_s"], env=env))
        if runs[-1].exit_code != 0 or not runs[-1].csv_files:
            break
        pd.concat([pd.read_csv(f) for f in runs[-1].csv_files]).to_csv(keep / f"run{i}.csv", index=False)
    return runs, ended(gate)  # when the command's last run on the GPU ended (benchmarks/gpu_overlap.py)


def _run_problem(meta: str, runs: list[Run], timeout_s: float, log: str) -> str | None:
    """Why the command's runs give no result (exit code, time limit, no CSV), in one line; None if they do."""
    last = runs[-1]
    if last.exit_code is None:
        return f"{meta}: the command ran past the time limit ({timeout_s} s)"
    if last.exit_code != 0:
        tail = [ln for ln in Path(log).read_text().splitlines() if ln.strip()][-1:]
        return f"{meta}: the command exited with {last.exit_code}: {tail[0] if tail else ''}"
    if not last.csv_files:
        return f"{meta}: the command wrote no CSV matching the target's csv:"
    return None


def _device(settings: dict) -> str:

    return "cuda" if settings.get("device") != "cpu" and detect_gpu(settings.get("device", "auto")) else "cpu"


def _judged(ws, meta: str, build_doc: dict, settings: dict, log: str, repeats: int, keep: Path):
    """(records per config, error, gate record): the command's runs in the version's worktree,
    each run's CSVs copied under ``keep`` (the next run removes them), read together."""

    keep.mkdir(parents=True, exist_ok=True)  # the rule's output, whatever happens
    if build_doc["status"] != "ok":
        return [], build_doc["error"], None
    try:
        runs, gate = _runs(ws, build_doc, settings, log, repeats, keep)
    except GateTimeout as e:  # its message starts "gate:"
        return [], str(e), {"gate": "timeout", "why": str(e)}
    except ValueError as e:  # pandas: an empty or malformed CSV
        return [], f"{meta}: the command's CSV is unreadable: {e}", None
    problem = _run_problem(meta, runs, settings["timeout_s"], log)
    if problem:
        return [], problem, gate
    try:
        files = sorted(keep.glob("run*.csv"))
        return command_csv.read(files, ws.command), None, gate
    except (WorkspaceError, ValueError) as e:
        return [], f"{meta}: {e}", gate


def correctness(
    *, version: str, target: str, build: str, out_json: str, out_md: str, out_runs: str, log: str, settings: dict
):
    """Rule `correctness`: the command once; exit code, its CSV, and every error column within the
    tolerance on every config (pass), else incorrect naming the first failing config, or failed."""

    ws, b = _workspace(target), json.loads((Path(build) / "build.json").read_text())
    meta = b["kernel"]
    records, err, gate = _judged(ws, meta, b, settings, log, 1, Path(out_runs))
    configs = [_check_row(r) for r in records]
    bad = next((c for c in configs if c["result"] != "PASS"), None)
    status = "failed" if err else ("incorrect" if bad else "pass")
    err = err or (f"config {bad['key']}: {bad['reason']}" if bad else None)
    device = _device(settings)
    doc = {"version": version, "status": status, "error": err, "device": device, "method": "command", "seeds": 0}
    prov = {**hashes(meta, ws.ref, ws.target, settings), "created": now(), "gate": gate, "commit": b.get("commit")}
    prov.update(command=ws.command.command, env=_environment(settings))
    doc.update(configs=configs, provenance=prov)
    write_json(out_json, doc)
    md = render(
        "correctness.md.j2",
        version=version,
        status=STATUS_WORDS[status],
        error=err,
        kernel=f"{meta} (commit {b.get('commit')})",
        ref=str(ws.ref),
        device=device,
        seeds=0,
        configs=configs,
        provenance=prov,
    )
    Path(out_md).write_text(md)
    return doc


def _environment(settings: dict) -> dict:
    """What the command ran on: the GPU, the Python and package versions (torch and triton read from
    their metadata, not imported)."""

    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    gpu = detect_gpu(settings.get("device", "auto"))
    return {
        "gpu": gpu,
        "python": platform.python_version(),
        "torch": version("torch"),
        "triton": version("triton"),
        "libraries": library_versions(),
    }


def _check_row(r: dict) -> dict:
    """A config's correctness record from its CSV record: PASS when every error column passed."""
    worst = max(r["errors"].values()) if r["errors"] else None
    return {
        "config": r["config"],
        "key": r["key"],
        "class": r["class"],
        "result": "PASS" if r["ok"] else "FAIL",
        "reason": r["reason"],
        "seeds": [],
        "max_abs": worst,
        "errors": r["errors"],
    }


def _under_profiler(ws, build_doc: dict, settings: dict, log: str, wrapper: list[str]) -> Run:
    """The command once under a profiler (``wrapper``: Nsight Compute or rocprofv3), behind the gate."""
    env, _ = acquire(settings.get("gate"), settings.get("device", "auto"))
    prefix = " ".join(shlex.quote(w) for w in wrapper) + " "
    return run_command(
        ws.command, Path(build_doc["worktree"]), Path(log), settings["timeout_s"], env=env, prefix=prefix
    )


def _launches_by_class(csv: Path) -> dict[str, list[dict]]:
    """ncu's launches of the target kernel: per ``kopt-class`` NVTX range when the command marks
    its configs so, else all under ``*``."""

    out: dict[str, list[dict]] = {}
    for ln in ncu.parse(csv.read_text()):
        out.setdefault(ln.get("class") or "*", []).append(ln)
    return out


def kernel_gpu_us(ws, build_doc: dict, settings: dict, log: str, raw: Path) -> tuple[dict[str, float], str]:
    """The target kernel's mean GPU time per launch (µs) from one run under Nsight Compute (per
    NVTX range ``kopt-class <config key or class>``, else for all: ``*``) or rocprofv3's kernel trace (for all;
    untested here, no AMD GPU), and a note on where the deciding time came from."""
    if not ws.command.kernel:
        return {}, "no kernel: pattern in target.yaml: the script's time column decides"
    raw = raw.resolve()  # the command runs in its worktree: a relative path would land there
    raw.mkdir(parents=True, exist_ok=True)
    timers = {"ncu": _ncu_gpu_us, "rocprofv3": _rocprof_gpu_us}
    backend = choose_backend(settings.get("profiler", "auto"), "cuda")
    if backend not in timers:
        return {}, f"no Nsight Compute or rocprofv3 here (profiler {backend}): the script's time column decides"
    try:
        return timers[backend](ws, build_doc, settings, log, raw)
    except GateTimeout as e:
        return {}, f"{e}: the script's time column decides"


def _ncu_gpu_us(ws, build_doc: dict, settings: dict, log: str, raw: Path) -> tuple[dict[str, float], str]:
    csv = raw / "ncu_timing.csv"
    wrapper = ncu.timing_command(settings.get("ncu", "ncu"), str(csv), ws.command.kernel)
    run = _under_profiler(ws, build_doc, settings, log, wrapper)
    if run.exit_code != 0 or not csv.is_file():
        return {}, f"the command failed under Nsight Compute (exit {run.exit_code}): the script's time column decides"
    by = {c: [ln["duration_us"] for ln in lns if ln.get("duration_us")] for c, lns in _launches_by_class(csv).items()}
    means = {c: sum(v) / len(v) for c, v in by.items() if v}
    scope = (
        "per kopt-class range (a config or a class)"
        if set(means) - {"*"}
        else "over all configs (no kopt-class ranges)"
    )
    return means, f"Nsight Compute: mean GPU time per launch of /{ws.command.kernel}/, {scope}"


def per_class_only(gpu: dict[str, float], note: str, records: list[dict]) -> tuple[dict[str, float], str]:
    """The GPU times, unless one mean over all configs (``*``) would stand for several classes:
    results are per class, never one average, so then the script's time column decides."""
    if set(gpu) != {"*"} or len({r["class"] for r in records}) < 2:
        return gpu, note
    return {}, (
        f"{note.split(':')[0]} saw the kernel's launches of every config together (the command marks no "
        "'kopt-class <config key>' NVTX range around a config): one mean would stand for every class, so the "
        "script's time column decides"
    )


def _rocprof_gpu_us(ws, build_doc: dict, settings: dict, log: str, raw: Path) -> tuple[dict[str, float], str]:
    run = _under_profiler(
        ws, build_doc, settings, log, rocprof.command(settings.get("rocprofv3", "rocprofv3"), str(raw))
    )
    traces = sorted(raw.rglob("*kernel_trace.csv"))
    if run.exit_code != 0 or not traces:
        return {}, f"the command failed under rocprofv3 (exit {run.exit_code}): the script's time column decides"
    pattern = re.compile(ws.command.kernel)
    mine = [k for k in rocprof.parse_kernel_trace(traces[0].read_text()) if pattern.search(k["name"])]
    launches = sum(k["launches"] for k in mine)
    if not launches:
        return {}, f"rocprofv3 saw no kernel matching /{ws.command.kernel}/: the script's time column decides"
    mean = sum(k["total_us"] for k in mine) / launches
    return {"*": mean}, f"rocprofv3: mean GPU time per launch of /{ws.command.kernel}/, over all configs"


def bench(
    *,
    version: str,
    target: str,
    build: str,
    correctness_json: str,
    out_csv: str,
    out_samples: str,
    out_meta: str,
    out_runs: str,
    log: str,
    settings: dict,
):
    """Rule `bench`: the command ``repeats`` times (its time column: the script's clock) and once
    under Nsight Compute (the target kernel's GPU time per launch: the clock that decides)."""
    ws, b = _workspace(target), json.loads((Path(build) / "build.json").read_text())
    corr = json.loads(Path(correctness_json).read_text())
    Path(out_runs).mkdir(parents=True, exist_ok=True)  # the rule's output, timed or not
    device = corr["device"]
    method = "command" if device == "cuda" else "cpu-command"
    note, gpu = "not timed", {}
    if corr["status"] != "pass":
        why = f"not timed: correctness {corr['status']}: {corr['error']}"
        rows = [_cells(c, "skipped", device, method, why) for c in corr["configs"]]
        records = []
    else:
        records, err, _ = _judged(ws, b["kernel"], b, settings, log, ws.command.repeats, Path(out_runs))
        if device == "cuda" and not err:
            gpu, note = per_class_only(*kernel_gpu_us(ws, b, settings, log, Path(out_runs) / "profiler"), records)
        outside = bool(gpu) and choose_backend(settings.get("profiler", "auto"), "cuda") == "ncu"
        rows = [_bench_row(r, device, method, gpu, outside) for r in records] or [
            _cells(c, "failed", device, method, err) for c in corr["configs"]
        ]
    cols = list(corr["configs"][0]["config"]) if corr["configs"] else []
    df = pd.DataFrame(rows, columns=cols + BENCH_COLUMNS)
    df.to_csv(out_csv, index=False)
    samples = [{"config_key": r["key"], "sample": i, "us": t} for r in records for i, t in enumerate(r["times_us"])]
    pd.DataFrame(samples, columns=["config_key", "sample", "us", "host_us", "seed", "set"]).to_csv(
        out_samples, index=False
    )
    prov = {**hashes(b["kernel"], ws.ref, ws.target, settings), "created": now(), "commit": b.get("commit")}
    timing = {"method": method, "repeats": ws.command.repeats, "command": ws.command.command, "deciding_clock": note}
    write_json(out_meta, {"version": version, "device": device, "timing": timing, "provenance": prov})
    return df


def _cells(c: dict, status: str, device: str, method: str, error: str | None) -> dict:
    """The start of a bench.csv row for a config record (config, key, class) with its status."""
    return {**config_cells(c), "status": status, "device": device, "method": method, "error": error}


def _bench_row(r: dict, device: str, method: str, gpu: dict[str, float], outside: bool = False) -> dict:
    """A config's bench.csv row: the median of its runs' time column, and the kernel's GPU time
    (``outside``: Nsight Compute's, recorded outside the command's processes: the ncu clock)."""

    t = np.asarray(r["times_us"])
    row = _cells(
        r, "ok" if r["ok"] else "failed", device, method, None if r["ok"] else f"config {r['key']}: {r['reason']}"
    )
    row.update(median_us=r["median_us"], p20_us=float(np.percentile(t, 20)), p80_us=float(np.percentile(t, 80)))
    gpu_us = gpu.get(r["key"], gpu.get(r["class"], gpu.get("*")))
    row.update(n_samples=len(t), profiler_us=gpu_us, clock="ncu" if outside and gpu_us else "in-process")
    if outside:
        row["gpu_us"] = gpu_us
    return row


def profile(*, version: str, target: str, build: str, correctness_json: str, out_dir: str, log: str, settings: dict):
    """Rule `profile`: the command once under Nsight Compute with its sections, the target kernel's
    launches per config class (``kopt-class`` NVTX ranges) or shared by every class; skipped
    without a GPU or without ncu, saying so."""

    ws, b = _workspace(target), json.loads((Path(build) / "build.json").read_text())
    corr, out = json.loads(Path(correctness_json).read_text()), Path(out_dir)
    raw = (out / "raw").resolve()  # the command runs in its worktree: a relative path would land there
    raw.mkdir(parents=True, exist_ok=True)
    doc = {"version": version, "status": "skipped", "error": None, "backend": None, "classes": [], "compiled": []}
    doc.update(
        language=ws.command.language, provenance={**hashes(b["kernel"], ws.ref, ws.target, settings), "created": now()}
    )
    if corr["status"] != "pass":
        doc["error"] = f"not profiled: correctness {corr['status']}: {corr['error']}"
    elif corr["device"] != "cuda" or choose_backend(settings.get("profiler", "auto"), "cuda") != "ncu":
        doc["error"] = "not profiled: no GPU or no Nsight Compute on this machine"
    else:
        launches, err = _ncu_profile(ws, b, settings, log, raw / "ncu_details.csv")
        if err:
            doc.update(status="failed", error=err)
        else:
            doc.update(status="ok", backend="ncu", classes=_profiled_classes(corr["configs"], launches))
    doc["raw_files"] = sorted(p.name for p in raw.iterdir())
    write_json(out / "profile.json", doc)
    return doc


def _ncu_profile(ws, build_doc: dict, settings: dict, log: str, csv: Path) -> tuple[dict | None, str | None]:
    """The command once under Nsight Compute with its sections (the kernel's first launches):
    (its launches by kopt-class range, None) or (None, why not)."""
    wrapper = ncu.command(settings["ncu"], str(csv), ws.command.kernel, in_range=False, launches=PROFILED_LAUNCHES)
    try:
        run = _under_profiler(ws, build_doc, settings, log, wrapper)
    except GateTimeout as e:
        return None, str(e)
    if run.exit_code != 0 or not csv.is_file():
        return None, f"the command failed under Nsight Compute (exit {run.exit_code})"
    return _launches_by_class(csv), None


def _profiled_classes(configs: list[dict], launches: dict[str, list[dict]]) -> list[dict]:
    """One profile record per config class: its own launches, else every launch of the kernel."""

    out = []
    for c in {c["class"]: c for c in configs}.values():
        mine = launches.get(c["class"]) or [ln for lns in launches.values() for ln in lns]
        longest = max(mine, key=lambda ln: ln.get("duration_us") or 0.0) if mine else None
        kernels = ncu.per_kernel(mine) if mine else []
        rec = {"class": c["class"], "config": c["config"], "key": c["key"], "kernels": kernels}
        rec.update(hottest=kernels[0] if kernels else None, counters=longest)
        rec.update(resources=kernel_resources(rec, []), ncu_launches=len(mine))
        out.append({**rec, "shared_by_classes": c["class"] not in launches})
    return out
