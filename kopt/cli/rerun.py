"""`kopt rerun vK`: a past version rebuilt in a tree of its own and compared (kopt.loop.rerun)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from kopt.cli.common import owned
from kopt.workspace.target import WorkspaceError


def cmd_rerun(a) -> int:
    """Rerun version ``a.version`` from what it was made from, in reruns/<workspace>/<version>-<n>/
    (never the original tree), and compare: exit 0 reproduces, 1 differs, 2 cannot."""
    from kopt.loop.decide import from_settings
    from kopt.loop.rerun import compare_runs, summary
    from kopt.workspace.recorded import changed_since, copy_workspace, materialize

    ws, _ = owned(a)
    v, results = a.version, Path(a.results)
    corr = results / v / "correctness.json"
    if not corr.is_file():
        raise WorkspaceError(f"{corr}: {v} has no results to rerun (build {results}/{v}/compare.json first)")
    recorded = results / v / "recorded"
    dest = _rerun_folder(Path("reruns") / ws.root.name, v)
    changed = changed_since(recorded, ws.root) if recorded.is_dir() else {}
    if a.current or not changed:
        workspace = ws.root if ws.command else copy_workspace(ws.root, dest / "workspace")
    elif ws.command is None:
        workspace = materialize(recorded, ws.root, dest / "workspace", int(v[1:]))
    else:
        print(
            f"kopt: cannot rerun {v}: a command target reruns from its workspace, and these files changed since: "
            + ", ".join(changed),
            file=sys.stderr,
        )
        return 2
    settings = json.loads(corr.read_text())["provenance"].get("settings") or {}
    extra = [f"device={settings['device']}"] if settings.get("device", "auto") != "auto" else []
    rc = _snakemake_rerun(dest, workspace, v, [*extra, *(a.config or [])])
    if rc != 0:
        print(f"kopt: the rerun of {v} failed (Snakemake exit {rc}; see {dest}/results/logs/)", file=sys.stderr)
        return 2
    decide = results / "settings" / "decide.json"
    rule = json.loads(decide.read_text()) if decide.is_file() else {}
    # the decision's own settings; a tree older than the floor had none (as before: no floor)
    doc = compare_runs(results, dest / "results", v, from_settings({"noise_floor_us": 0.0, **rule}))
    doc["workspace_changed_since"] = {k: {"recorded": r, "now": n} for k, (r, n) in changed.items()}
    doc["ran"] = (
        "the recorded files"
        if changed and not a.current
        else "the workspace as it is now" + ("" if recorded.is_dir() else f" ({recorded} is missing: an older tree)")
    )
    (dest / "rerun.json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = summary(doc) + [f"  {k} changed since; the rerun ran {doc['ran']}" for k in changed]
    print("\n".join(lines))
    return 0 if doc["verdict"] == "reproduces" else 1


def _rerun_folder(base: Path, version: str) -> Path:
    n = 1
    while (base / f"{version}-{n}").exists():
        n += 1
    (base / f"{version}-{n}").mkdir(parents=True)
    return base / f"{version}-{n}"


def _snakemake_rerun(dest: Path, workspace: Path, version: str, config: list[str]) -> int:
    """The graph targets of the rerun: the version's gate and timing, profile and recorded files."""
    snakefile = Path(__file__).resolve().parents[2] / "Snakefile"  # kopt/cli/rerun.py -> the repository
    targets = [f"results/{version}/bench.json", f"results/{version}/profile", f"results/{version}/recorded"]
    cmd = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "-d", str(dest), "--cores", "1", *targets]
    cmd += ["--config", f"workspace={workspace.resolve()}", *config]
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd).returncode
