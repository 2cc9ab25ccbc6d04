"""Rule `reference` (rules/correctness.smk): ref.py on its own; and the correctness gate's verdict
and files for each version, checked against it on fresh inputs (the child that checks, then times
a version is started by kopt.steps.bench.check_then_time)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kopt.measure.runner import ChildOutcome, run_gated
from kopt.report.render import render
from kopt.steps.common import child_request, records_of, write_json
from kopt.workspace.provenance import hashes, now
from kopt.workspace.target import Workspace, WorkspaceError, load_workspace

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
    doc = {
        **outcome.result,
        "timeline": outcome.timeline,
        "provenance": {**hashes(str(ws.ref), ws.ref, ws.target, params), "created": now()},
    }
    write_json(out_json, doc)
    return doc


@dataclass
class Checked:
    """The correctness gate's outcome for one version: status, error, device and a record per config."""

    status: str  # pass | incorrect | failed | unsupported
    error: str | None
    device: str
    records: list[dict]
    outcome: ChildOutcome | None  # None: no child ran (a failed build, no GPU)


def blocked_check(req: dict, blocked: tuple[str, str]) -> Checked:
    """A version that cannot run here (``cannot_run``): the reason is the verdict of every config."""
    status, err = blocked
    device = "cpu" if status == "unsupported" else "cuda"
    records = [{**it, "result": "NOT RUN", "reason": err, "seeds": []} for it in req["configs_by_device"][device]]
    return Checked(status, err, device, records, None)


def checked(outcome: ChildOutcome, req: dict) -> Checked:
    """The gate's verdict from the child that checked every config."""
    device, records, err, _ = records_of(outcome, req)
    status, err = _verdict(records, err)
    return Checked(status, err, device, records, outcome)


def write_correctness(
    c: Checked, ws: Workspace, *, version: str, kernel: str, out_json: str, out_md: str, params: dict
) -> dict:
    """correctness.json and correctness.md of a version (or a torch baseline: ``kernel`` is ref.py)."""
    for r in c.records:
        r.pop("tol", None)
    o = c.outcome
    env = (o.result or {}).get("env") if o else None
    doc = {
        "version": version,
        "status": c.status,
        "error": c.error,
        "device": c.device,
        "method": "not run" if o is None else ("cpu-interpreter" if c.device == "cpu" else c.device),
        "seeds": ws.seeds,
        "configs": c.records,
        "provenance": {
            **hashes(kernel, ws.ref, ws.target, params),
            "created": now(),
            "env": env,
            # the kernel's process's sandbox (kopt.inside.sandbox), as set before its code was imported
            "sandbox": (o.result or {}).get("sandbox") if o else None,
            # torch's TF32 switches in the kernel's process: off unless target.yaml's tf32 (kopt.inside.serve)
            "precision": (o.result or {}).get("precision") if o else None,
            # how the interpreter ran the kernel unlike a GPU, as its process said (kopt.inside.interpreter)
            "notes": (o.result or {}).get("notes") if o else None,
            "child": o.status if o else "not run",
            "child_timeline": o.timeline if o else None,
            "gate": o.gate if o else None,
        },
    }
    write_json(out_json, doc)
    Path(out_md).write_text(
        render(
            "correctness.md.j2",
            version=version,
            status=STATUS_WORDS[c.status],
            error=c.error,
            kernel=kernel,
            ref=str(ws.ref),
            device=c.device if o else f"{c.device} (not run)",
            seeds=ws.seeds,
            configs=c.records,
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
