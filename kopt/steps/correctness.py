"""Rules `reference` and `correctness` (rules/correctness.smk): ref.py on its own, then each
version against it on fresh inputs, in a child process under the time limit."""

from __future__ import annotations

from pathlib import Path

from kopt.measure.runner import run_gated
from kopt.report.render import render
from kopt.steps.common import cannot_run, child_request, records_of, write_json
from kopt.workspace.provenance import hashes, now
from kopt.workspace.target import WorkspaceError, load_workspace

# correctness.md's word for each status of correctness.json
STATUS_WORDS = {"pass": "pass", "incorrect": "fail", "failed": "failed", "unsupported": "not run"}


def check_reference(*, target: str, out_json: str, log: str, params: dict) -> dict:
    """ref.py on its own, before any version is judged: a fault stops the graph with one line
    (WorkspaceError) naming the file, the function and the config, and touches no version."""
    ws = load_workspace(Path(target).parent, versions=False)
    req = child_request(ws, str(ws.ref), params)
    outcome = run_gated("reference", req, params, timeout_s=params["timeout_s"], log_path=log)
    if not outcome.ok:
        err = str(outcome.error).removeprefix("ref.py: ").removeprefix(f"{ws.ref}: ")
        raise WorkspaceError(f"{ws.ref}: {err}; no version was run")
    doc = {**outcome.result, "provenance": {**hashes(str(ws.ref), ws.ref, ws.target, params), "created": now()}}
    write_json(out_json, doc)
    return doc


def correctness(
    *,
    version: str,
    target: str,
    kernel: str,
    out_json: str,
    out_md: str,
    log: str,
    params: dict,
    impl: str | None = None,
    builds: list[str] | None = None,
) -> dict:
    """``impl`` (eager / compile) checks the torch baseline instead; ``kernel`` is then ref.py.
    ``builds``: the build folders of a CUDA/HIP version's kernels; when they cannot run here (a
    failed build, no GPU) no child starts and the reason is the verdict."""
    ws = load_workspace(Path(target).parent, versions=False)
    req = child_request(ws, kernel, params, impl, builds)
    blocked = cannot_run(builds or [], params)
    if blocked:
        status, err = blocked
        device, env, outcome = ("cpu" if status == "unsupported" else "cuda"), None, None
        records = [{**it, "result": "NOT RUN", "reason": err, "seeds": []} for it in req["configs_by_device"][device]]
    else:
        outcome = run_gated("correctness", req, params, timeout_s=params["timeout_s"], log_path=log)
        device, records, err, env = records_of(outcome, req)
        status, err = _verdict(records, err)
    for r in records:
        r.pop("tol", None)
    doc = {
        "version": version,
        "status": status,
        "error": err,
        "device": device,
        "method": "not run" if outcome is None else ("cpu-interpreter" if device == "cpu" else device),
        "seeds": ws.seeds,
        "configs": records,
        "provenance": {
            **hashes(kernel, ws.ref, ws.target, params),
            "created": now(),
            "env": env,
            "child": outcome.status if outcome else "not run",
            "gate": outcome.gate if outcome else None,
        },
    }
    write_json(out_json, doc)
    Path(out_md).write_text(
        render(
            "correctness.md.j2",
            version=version,
            status=STATUS_WORDS[status],
            error=err,
            kernel=kernel,
            ref=str(ws.ref),
            device=device if outcome else f"{device} (not run)",
            seeds=ws.seeds,
            configs=records,
            provenance=doc["provenance"],
        )
    )
    return doc


def _verdict(records: list[dict], err: str | None) -> tuple[str, str | None]:
    """pass, incorrect (the first failing config says why) or failed (the child's error)."""
    for r in records:
        r.setdefault("result", "PASS" if r.get("ok") else "FAIL")
    if err:
        return "failed", err
    bad = next((r for r in records if r["result"] != "PASS"), None)
    return ("incorrect", f"config {bad['key']}: {bad['reason']}") if bad else ("pass", None)
