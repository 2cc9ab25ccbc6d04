"""Rules `reference` and `correctness` (rules/correctness.smk): ref.py on its own, then each
version against it on fresh inputs, in a child process under the time limit."""

from __future__ import annotations

from pathlib import Path

from kopt.measure.runner import run_gated
from kopt.report.render import render
from kopt.steps.common import child_request, records_of, write_json
from kopt.workspace.provenance import hashes, now
from kopt.workspace.target import WorkspaceError, load_workspace


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
) -> dict:
    """``impl`` (eager / compile) checks the torch baseline instead; ``kernel`` is then ref.py."""
    ws = load_workspace(Path(target).parent, versions=False)
    req = child_request(ws, kernel, params, impl)
    outcome = run_gated("correctness", req, params, timeout_s=params["timeout_s"], log_path=log)
    device, records, err, env = records_of(outcome, req)
    for r in records:
        r.setdefault("result", "PASS" if r.get("ok") else "FAIL")
        r.pop("tol", None)
    if err:
        status = "failed"
    elif any(r["result"] != "PASS" for r in records):
        status = "incorrect"
        bad = next(r for r in records if r["result"] != "PASS")
        err = f"config {bad['key']}: {bad['reason']}"
    else:
        status = "pass"
    doc = {
        "version": version,
        "status": status,
        "error": err,
        "device": device,
        "method": "cpu-interpreter" if device == "cpu" else device,
        "seeds": ws.seeds,
        "configs": records,
        "provenance": {
            **hashes(kernel, ws.ref, ws.target, params),
            "created": now(),
            "env": env,
            "child": outcome.status,
            "gate": outcome.gate,
        },
    }
    write_json(out_json, doc)
    Path(out_md).write_text(
        render(
            "correctness.md.j2",
            version=version,
            status={"pass": "pass", "incorrect": "fail", "failed": "failed"}[status],
            error=err,
            kernel=kernel,
            ref=str(ws.ref),
            device=device,
            seeds=ws.seeds,
            configs=records,
            provenance=doc["provenance"],
        )
    )
    return doc
