"""Provenance carried by every result file: content hashes and the software/hardware that ran."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

from kopt.workspace.commands import for_target, snakemake_command
from kopt.workspace.target import kernel_files


def sha256_file(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def sha256_json(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()


def hashes(kernel: str | Path, ref: str | Path, target: str | Path, params: dict) -> dict:
    """What a result was made from: content hashes of its files (a dispatching version's routed
    kernels too, by file name), and the settings in effect."""
    return {
        "kernel_sha256": sha256_file(kernel),
        "routed_sha256": {p.name: sha256_file(p) for p in _routed(kernel)},
        "ref_sha256": sha256_file(ref),
        "target_sha256": sha256_file(target),
        "params_sha256": sha256_json(params),
        "settings": params,
    }


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


LIBRARIES = (
    "numpy",
    "scipy",
    "pandas",
    "matplotlib",
    "jinja2",
    "pyyaml",
    "jsonschema",
    "cuda-bindings",
    "nvidia-ml-py",
)


def package_version(name: str) -> str | None:
    """An installed distribution's version, read from its record without importing it (None: not
    installed): importing triton only for its version cost a judge 0.3 s of CPU a process."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def library_versions() -> dict[str, str | None]:
    """Versions of the numeric and support libraries (None: not installed), without importing them."""
    return {name: package_version(name) for name in LIBRARIES}


class StaleResult(ValueError):
    """A result made from other files than the ones its consumer now declares."""


def made_from_other(
    result: str | Path, *, ref: str | Path, target: str | Path, kernel: str | Path | None = None
) -> tuple[str, str] | None:
    """Which file a result was made from has other contents now, by its recorded sha256: the
    file's key (ref_sha256, target_sha256, kernel_sha256, routed_sha256) and what differs, as the
    end of a sentence that starts with the result's path."""
    rec = (json.loads(Path(result).read_text()).get("provenance") or {}) if Path(result).is_file() else {}
    files = [("ref_sha256", ref, rec.get("ref_sha256")), ("target_sha256", target, rec.get("target_sha256"))]
    if kernel:
        files.append(("kernel_sha256", kernel, rec.get("kernel_sha256")))
        files += [("routed_sha256", p, (rec.get("routed_sha256") or {}).get(p.name)) for p in _routed(kernel)]
    for key, path, recorded in files:
        sha = sha256_file(path)
        if recorded is None:
            return key, f"records no sha256 of {path}"
        if recorded != sha:
            return key, f"was made from another {path} (sha256 {recorded[:12]}, now {sha[:12]})"
    return None


def _routed(kernel: str | Path) -> list[Path]:
    return [p for p in kernel_files(kernel) if p != Path(kernel)]


KEPT = "Snakemake would keep it (a copy with an old modification time, or --rerun-triggers mtime)"


def check_made_from(
    result: str | Path, *, ref: str | Path, target: str | Path, kernel: str | Path | None = None
) -> None:
    """Use a result only if its recorded hashes match the files in place now. Snakemake decides
    reruns by modification time: a file copied with its old time, or ``--rerun-triggers mtime``
    after switching workspaces, would otherwise hand over results made from other files."""
    other = made_from_other(result, ref=ref, target=target, kernel=kernel)
    if other:
        # a new ref.py or target.yaml makes every result stale: rebuild all from the reference
        rebuild = "reference" if other[0] in ("ref_sha256", "target_sha256") else result
        raise StaleResult(
            f"{result} {other[1]} and {KEPT}: rebuild it and what was made from it: "
            f"add --forcerun {rebuild} after the targets of the snakemake command (--forcerun takes every word after it)"
        )


def kept_but_stale(
    result: str | Path, *, ref: str | Path, target: str | Path, kernel: str | Path | None = None
) -> tuple[str, str] | None:
    """A result that Snakemake would keep by its age (newer than its files) although its recorded
    hashes say it was made from other contents: the result and why, as one line; else None (a
    missing or older result is rebuilt anyway)."""
    files = [Path(f) for f in (ref, target, kernel) if f]
    r = Path(result)
    if not all(f.is_file() for f in files) or not r.is_file():
        return None
    if r.stat().st_mtime < max(f.stat().st_mtime for f in files):
        return None
    try:
        other = made_from_other(r, ref=ref, target=target, kernel=kernel)
    except ValueError:
        return str(r), f"{r} is not valid JSON"
    return (str(r), f"{r} {other[1]} and {KEPT}") if other else None


# --- whose results tree this is ------------------------------------------------------------

OWNER = "workspace.json"


def workspace_id(root: str | Path) -> str:
    """A workspace's identity: its path from the working folder when inside it (so moving the
    whole project keeps it), else its absolute path."""
    p = Path(root).resolve()
    try:
        return str(p.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(p)


def write_owner(out: str | Path, log: str | Path, *, name: str, ref: str | Path, target: str | Path) -> dict:
    """results/workspace.json: the workspace (target.yaml's folder) this tree belongs to."""
    doc = {
        "workspace": workspace_id(Path(target).parent),
        "name": name,
        "ref_sha256": sha256_file(ref),
        "target_sha256": sha256_file(target),
        "created": now(),
    }
    Path(out).write_text(json.dumps(doc, indent=1) + "\n")
    Path(log).write_text(f"{out}: {doc['workspace']}\n")
    return doc


def owner_problem(results: str | Path, workspace: str | Path, command: str | None = None) -> str | None:
    """Why this results tree must not be used for the workspace folder ``workspace`` (None: it may).
    A tree records whose it is in results/workspace.json (the path as seen from the folder the tree
    is in); one with results but no record is refused too. ``command``: the snakemake command that
    gives the workspace a folder of its own, as the hint (with ``<targets>``)."""
    results, here = Path(results), Path(workspace).resolve()
    command = command or for_target(snakemake_command(str(workspace), folder=f"runs/{here.name}"), "<targets>")
    rec = results / OWNER
    if rec.is_file():
        owner = json.loads(rec.read_text()).get("workspace")
        if owner and (results.parent / owner).resolve() == here:
            return None
        return (
            f"{results}/ holds the results of workspace {owner} ({rec}), not {workspace}: give {workspace} its own "
            f"folder ({command}), "
            f"or move {results}/ aside"
        )
    made = [p for p in (*results.glob("v[0-9]*"), results / "reference.json", results / "baselines") if p.exists()]
    if made:
        return (
            f"{results}/ holds results ({made[0]}) but no {rec} saying whose they are (an older kopt, or a copy): "
            f"move {results}/ aside (mv {results} {results}.old) and rerun"
        )
    return None
