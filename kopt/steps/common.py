"""What every step shares: the child request built from the workspace, the records of a child's
outcome per config, the start of a bench.csv row, JSON output, logs and one-line faults."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from kopt.profilers.gpus import detect_gpu
from kopt.workspace.provenance import StaleResult
from kopt.workspace.target import Workspace, WorkspaceError, config_class, config_key


def config_items(ws: Workspace, configs: list[dict]) -> list[dict]:
    """The configs as the child takes them: config, key, class and tolerances."""
    return [
        {
            "config": c,
            "key": config_key(c),
            "class": config_class(c, ws.class_by),
            "tol": ws.tolerance(c),
            "tolerances": ws.output_tolerances(),
        }
        for c in configs
    ]


def read_builds(builds: list[str]) -> list[dict]:
    """The build.json of each build folder (rule `build`) a version's kernels came from."""
    return [json.loads((Path(b) / "build.json").read_text()) for b in builds]


def cannot_run(builds: list[str], params: dict) -> tuple[str, str] | None:
    """Why a version with compiled kernels cannot run here, as (correctness status, error): a
    failed build fails it; on a machine without a GPU it is ``unsupported`` (needs a CUDA GPU), not
    failed and not counted; without a compiler on a GPU machine it fails. None: it can run."""
    docs = read_builds(builds)
    failed = next((d for d in docs if d["status"] == "failed"), None)
    if failed:
        return "failed", failed["error"]
    if docs and (params.get("device") == "cpu" or not detect_gpu(params.get("device", "auto"))):
        kinds = sorted({"HIP" if d["kernel"].endswith(".hip") else "CUDA" for d in docs})
        return "unsupported", f"needs a {'/'.join(kinds)} GPU: {', '.join(d['kernel'] for d in docs)} cannot run here"
    missing = next((d for d in docs if d["status"] != "ok"), None)
    return ("failed", missing["error"]) if missing else None


def child_request(
    ws: Workspace, kernel: str, params: dict, impl: str | None = None, builds: list[str] | None = None
) -> dict:
    """The request a child process runs on (kopt.workspace.records.ChildRequest); ``impl``: a torch
    baseline; ``builds``: the build folders of its CUDA/HIP kernels."""
    libraries = {
        str(Path(d["kernel"]).resolve()): str(Path(d["library"]).resolve())
        for d in read_builds(builds or [])
        if d["status"] == "ok"
    }
    return {
        "ref": str(ws.ref),
        "kernel": f"torch:{impl}" if impl else str(kernel),
        "device": params.get("device", "auto"),
        "seeds": ws.seeds,
        "configs_by_device": {"cpu": config_items(ws, ws.cpu_configs), "cuda": config_items(ws, ws.configs)},
        "opts": params.get("bench", {}),
        "inputs": params.get("inputs", {}),
        "builds": libraries,
        "clock": clock_tool(params.get("bench", {})),
        "tf32": ws.tf32,
    }


def clock_tool(bench: dict) -> str | None:
    """The Nsight Compute executable of the clock that decides on a GPU (``bench.clock``: ``auto``,
    ncu when it is found; a path; ``in-process``: none), or None (the in-process clocks decide,
    labelled so)."""
    import shutil

    want = str(bench.get("clock", "auto"))
    if want == "in-process":
        return None
    return shutil.which("ncu" if want == "auto" else want)


def write_json(path: str | Path, obj) -> None:
    """Write a result file (parents made), indented, anything not JSON as text."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(obj, indent=2, default=str) + "\n")


def records_of(outcome, request: dict) -> tuple[str, list[dict], str | None, dict | None]:
    """Records per config (finished, failed, not run), the overall error, and the child's env."""
    result = outcome.result or {}
    records = result.get("configs") or list(outcome.records)
    device = result.get("device") or outcome.device
    done = {r["key"] for r in records}
    err = None if outcome.ok else outcome.error
    # the configs the child would have run (on the device it chose, or was told to use)
    items = request["configs_by_device"]["cpu" if (device or request["device"]) == "cpu" else "cuda"]
    failing = outcome.current.removeprefix("config ") if outcome.current else None
    for it in items:
        if it["key"] in done:
            continue
        if it["key"] == failing:
            records.append({**it, "result": "FAILED", "reason": err, "seeds": []})
        else:
            records.append({**it, "result": "NOT RUN", "reason": None, "seeds": []})
    return device or request["device"], records, err, result.get("env")


@contextmanager
def one_line_faults():
    """A workspace fault or a stale input fails the job with one line on the terminal (kopt: ...)."""
    try:
        yield
    except (WorkspaceError, StaleResult) as e:
        print(f"kopt: {e}")
        sys.__stderr__.write(f"kopt: {e}\n")
        raise SystemExit(1) from None


def redirect_log(path: str):
    """Send a rule script's stdout/stderr to its ``log:`` file."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("")
    # appending: a tool the step runs may append to the same log without being overwritten
    f = open(path, "a", buffering=1)  # noqa: SIM115 - the log stays open for the step
    sys.stdout = sys.stderr = f
    return f


def config_cells(item: dict) -> dict:
    """The start of a bench.csv row: the config's own columns, its key and class."""
    return {**item["config"], "config_key": item["key"], "config_class": item["class"]}


def run_group(cmd: list[str] | str, *, cwd: Path | None, out, timeout_s: float, env: dict | None = None) -> int | None:
    """A tool or a benchmark command in its own process group, its output to the file ``out``;
    its exit code, or None when the whole group was killed at the time limit (a compiler's or a
    shell's children die with it)."""
    proc = subprocess.Popen(
        cmd,
        shell=isinstance(cmd, str),
        cwd=cwd,
        stdout=out,
        stderr=out,
        start_new_session=True,
        env={**os.environ, **(env or {})},
    )
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None
