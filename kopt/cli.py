"""The kopt command: what is not a graph target.

kopt new [--workspace W] [--from vK]     write the next version's kernel and metadata
kopt status [--workspace W]              the loop state and what to run next
kopt mask vN / kopt unmask vN            take a version out of the fold / back in
kopt rerun vN [--current] [--config k=v ...]   rerun a past version in a tree of its own and compare
kopt experience add|recommend|search|list|merge|stats ...
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from kopt.loop.state import latest
from kopt.workspace.commands import for_target, from_results
from kopt.workspace.provenance import owner_problem
from kopt.workspace.target import WorkspaceError, load_workspace


def _config_workspace() -> str:
    cfg = Path("config/config.yaml")
    if cfg.is_file():
        return (yaml.safe_load(cfg.read_text()) or {}).get("workspace", "examples/softmax")
    return "examples/softmax"


def _owned(a):
    """The workspace, and refusal when the results tree belongs to another one."""
    ws = load_workspace(a.workspace)
    problem = owner_problem(a.results, ws.root)
    if problem:
        raise WorkspaceError(problem)
    return ws, from_results(a.workspace, a.results)


NEW_META = (
    "# Fill these in before running (TODO is refused): what changes and why, the evidence\n"
    "# (profile, roofline, bottleneck.json), and which metric should move and how far.\n"
    'hypothesis: "TODO"\n'
    'rationale: "TODO"\n'
    'expected: "TODO"\n'
    "target_class: all\n"
    "# strategy: an id from kopt/analysis/data/strategies.yaml (see `kopt experience recommend`)\n"
)


def cmd_new(a) -> int:
    ws, command = _owned(a)
    st = latest(a.results, [v.name for v in ws.versions])
    base = a.from_version or (st or {}).get("best") or ws.versions[-1].name
    src = ws.version(base)
    n = len(ws.versions)
    if ws.command is not None:
        return _new_attempt(ws, Path(a.results), base, n, command)
    if src.kind == "dispatch":
        raise WorkspaceError(
            f"{src.meta_path}: {base} is a dispatching version; start from one of its kernels (--from)"
        )
    kdir = ws.root / "kernels"
    new_py, new_yaml = kdir / f"v{n}{src.kernel.suffix}", kdir / f"v{n}.yaml"
    shutil.copy(src.kernel, new_py)
    new_yaml.write_text(f"parent: {base}\n" + NEW_META)
    print(f"wrote {new_py} (a copy of {base}) and {new_yaml}; edit both, then:")
    print(f"  {for_target(command, f'results/v{n}/compare.json')}")
    return 0


def _new_attempt(ws, results: Path, base: str, n: int, command: str) -> int:
    """A command target: branch kopt/vN with its worktree attempts/vN at the base version's commit
    (a patched version's includes its patch), and kernels/vN.yaml naming the branch."""
    from kopt.steps.worktree import CommandError, git

    built = results / base / "build" / "build.json"
    if not built.is_file():
        raise WorkspaceError(f"{built}: {base} is not built yet, so its commit is unknown: run the graph first")
    doc = json.loads(built.read_text())
    if doc["status"] != "ok":
        raise WorkspaceError(f"{built}: {base} did not build ({doc['error']}): start from another version (--from)")
    branch, dest = f"kopt/v{n}", (ws.root / "attempts" / f"v{n}").resolve()
    try:
        git(ws.command.repository, "worktree", "add", "-b", branch, str(dest), doc["commit"])
    except CommandError as e:
        raise WorkspaceError(f"{ws.command.repository}: {e}") from None
    meta = ws.root / "kernels" / f"v{n}.yaml"
    meta.write_text(f"parent: {base}\ncommit: {branch}\n" + NEW_META)
    print(f"made branch {branch} at {base}'s code, checked out in {dest}, and wrote {meta}.")
    print(f"Commit your change on {branch} there, fill in {meta.name}, then:")
    print(f"  {for_target(command, f'results/v{n}/compare.json')}")
    return 0


def cmd_status(a) -> int:
    ws, command = _owned(a)
    st = latest(a.results, [v.name for v in ws.versions])
    print(f"workspace {ws.root}: versions {ws.versions[0].name}..{ws.versions[-1].name}")
    if st is None:
        print(f"no results yet; run: {for_target(command, 'results/' + ws.versions[-1].name + '/compare.json')}")
        return 0
    print(f"best: {st.get('best')}  (state after {st.get('after')})")
    print(f"consecutive regressions: {st.get('consecutive_regressions', 0)}")
    if st.get("repairs"):
        print(f"failed repairs per proposal: {st['repairs']}; abandoned: {st.get('abandoned', [])}")
    if st.get("masked"):
        print(f"masked: {st['masked']}")
    missing = [v.name for v in ws.versions if not (Path(a.results) / v.name / "compare.json").is_file()]
    if st.get("stop"):
        print(f"STOP: {st.get('stop_reason')}")
        print("next: the loop has stopped; change the config or the target to go on")
    elif missing:
        print(f"next: {for_target(command, f'results/{missing[-1]}/compare.json')}   (not built: {', '.join(missing)})")
    else:
        new = (
            "kopt new"
            + ("" if a.workspace_default else f" --workspace {a.workspace}")
            + ("" if a.results == "results" else f" --results {a.results}")
        )
        print(f"next: {new}   (then fill in the hypothesis and edit the kernel)")
    return 0


def _set_mask(a, value: bool) -> int:
    ws = load_workspace(a.workspace)
    v = ws.version(a.version)
    lines = v.meta_path.read_text().splitlines() if v.meta_path.is_file() else []
    lines = [ln for ln in lines if not ln.startswith("masked:")]
    if value:
        lines.append("masked: true")
    v.meta_path.write_text("\n".join(lines) + "\n")
    print(
        f"{v.meta_path}: {'masked' if value else 'unmasked'}; its comparison and every later one rerun on the next snakemake"
    )
    return 0


def cmd_rerun(a) -> int:
    """Rerun version ``a.version`` from what it was made from, in reruns/<workspace>/<version>-<n>/
    (never the original tree), and compare: exit 0 reproduces, 1 differs, 2 cannot."""
    from kopt.loop.rerun import compare_runs, summary
    from kopt.workspace.recorded import changed_since, materialize

    ws, _ = _owned(a)
    v, results = a.version, Path(a.results)
    corr = results / v / "correctness.json"
    if not corr.is_file():
        raise WorkspaceError(f"{corr}: {v} has no results to rerun (build {results}/{v}/compare.json first)")
    recorded = results / v / "recorded"
    dest = _rerun_folder(Path("reruns") / ws.root.name, v)
    changed = changed_since(recorded, ws.root) if recorded.is_dir() else {}
    if a.current or not changed:
        workspace = ws.root if ws.command else materialize_current(ws.root, dest)
    elif ws.command is None:
        workspace = materialize(recorded, ws.root, dest / "workspace")
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
    noise = float(json.loads(decide.read_text())["noise_pct"]) if decide.is_file() else 1.0
    doc = compare_runs(results, dest / "results", v, noise)
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


def materialize_current(root: Path, dest: Path) -> Path:
    """A copy of the workspace as it is now (the rerun never reads the original folder's results)."""
    from kopt.workspace.recorded import NOT_COPIED

    shutil.copytree(root, dest / "workspace", ignore=shutil.ignore_patterns(*NOT_COPIED))
    return dest / "workspace"


def _rerun_folder(base: Path, version: str) -> Path:
    n = 1
    while (base / f"{version}-{n}").exists():
        n += 1
    (base / f"{version}-{n}").mkdir(parents=True)
    return base / f"{version}-{n}"


def _snakemake_rerun(dest: Path, workspace: Path, version: str, config: list[str]) -> int:
    """The graph targets of the rerun: the version's gate and timing, profile and recorded files."""
    snakefile = Path(__file__).resolve().parents[1] / "Snakefile"
    targets = [f"results/{version}/bench.json", f"results/{version}/profile", f"results/{version}/recorded"]
    cmd = [sys.executable, "-m", "snakemake", "-s", str(snakefile), "-d", str(dest), "--cores", "1", *targets]
    cmd += ["--config", f"workspace={workspace.resolve()}", *config]
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd).returncode


def cmd_experience(a) -> int:
    from kopt.loop.experience import ENTERED, Store, dumps

    with Store(a.db or None) as st:
        if a.exp == "add":
            entry = {k: getattr(a, k) for k in ENTERED}
            print("added" if st.add({**entry, "source": "manual"}) else "already there")
        elif a.exp == "recommend":
            rows = st.recommend(a.kernel_type, a.backend, a.chip, a.bottleneck, n=a.n)
            for i, r in enumerate(rows, 1):
                print(
                    f"{i}. {r['strategy']}: score {r['score']:.2f} ({r['keeps']} kept of {r['tries']} tried, {r['basis']}; "
                    f"{r['keeps_everywhere']}/{r['tries_everywhere']} everywhere): {r['idea']}"
                )
        elif a.exp == "search":
            print(dumps(st.search(a.text)))
        elif a.exp == "list":
            print(dumps(st.list(limit=a.limit, include_priors=a.priors)))
        elif a.exp == "merge":
            print(f"merged {st.merge(a.other)} new entries from {a.other} into {st.path}")
        elif a.exp == "stats":
            print(json.dumps({"store": str(st.path), **st.stats()}, indent=1))
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kopt", description="kernel-opt: what is not a graph target")
    sub = p.add_subparsers(dest="cmd", required=True)

    def ws_args(sp):
        sp.add_argument("--workspace", default=None, help="target folder (default: config/config.yaml's)")
        sp.add_argument("--results", default="results", help="results folder (default: results)")

    sp = sub.add_parser("new", help="write the next version's kernel and metadata from the current best")
    ws_args(sp)
    sp.add_argument("--from", dest="from_version", help="start from this version instead of the best")
    sp.set_defaults(fn=cmd_new)
    sp = sub.add_parser("status", help="the loop state: best, counters, stop flag, what to run next")
    ws_args(sp)
    sp.set_defaults(fn=cmd_status)
    for name, val in (("mask", True), ("unmask", False)):
        sp = sub.add_parser(name, help=f"{name} a version ({'take it out of' if val else 'put it back into'} the fold)")
        ws_args(sp)
        sp.add_argument("version")
        sp.set_defaults(fn=lambda a, v=val: _set_mask(a, v))
    sp = sub.add_parser("rerun", help="rerun a past version in a tree of its own; reproduces (0) or differs (1)")
    ws_args(sp)
    sp.add_argument("version")
    sp.add_argument("--current", action="store_true", help="run the workspace's files as they are now")
    sp.add_argument("--config", nargs="*", default=[], help="more Snakemake --config values (key=value)")
    sp.set_defaults(fn=cmd_rerun)
    ep = sub.add_parser("experience", help="the experience log (SQLite)")
    ep.add_argument("--db", default=None, help="store path (default: the user's data directory)")
    es = ep.add_subparsers(dest="exp", required=True)
    x = es.add_parser("add", help="add an entry by hand")
    for f in ("kernel_type", "backend", "chip", "bottleneck", "strategy", "hypothesis", "outcome"):
        x.add_argument(f"--{f.replace('_', '-')}", dest=f, required=True)
    x.add_argument("--reason", default=None)
    x.add_argument("--change-pct", dest="change_pct", type=float, default=None)
    x = es.add_parser("recommend", help="strategies ranked by past success, with the counts")
    for f in ("kernel_type", "backend", "chip", "bottleneck"):
        x.add_argument(f"--{f.replace('_', '-')}", dest=f, required=True)
    x.add_argument("-n", type=int, default=5)
    x = es.add_parser("search", help="entries whose text fields contain TEXT")
    x.add_argument("text")
    x = es.add_parser("list", help="the entries")
    x.add_argument("--limit", type=int, default=None)
    x.add_argument("--priors", action="store_true", help="include the strategies table's priors")
    x = es.add_parser("merge", help="add another store's entries (no duplicates)")
    x.add_argument("other")
    es.add_parser("stats", help="counts by outcome, kernel types, chips")
    ep.set_defaults(fn=cmd_experience)
    return p


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    a.workspace_default = getattr(a, "workspace", "x") is None
    if a.workspace_default:
        a.workspace = _config_workspace()
    try:
        return a.fn(a)
    except (WorkspaceError, FileNotFoundError, ValueError) as e:
        print(f"kopt: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
