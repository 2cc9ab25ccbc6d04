"""The loop's commands: `kopt status [--json]`, `kopt eval [vN]`, `kopt new [--from vK | --repair vK |
--split]`, `kopt mask|unmask vN`. The state and the next action come from kopt.loop.state.record,
the one builder results/state.json uses too."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from kopt.cli.common import owned
from kopt.loop.decide import MAX_REPAIRS
from kopt.loop.state import describe_next, record
from kopt.report.verdicts import NO_BASELINE_EXIT
from kopt.workspace.commands import for_target
from kopt.workspace.target import WorkspaceError, load_workspace

NEW_META = (
    "# Fill these in before running (a version that still says TODO is a draft: the graph skips it):\n"
    "# what changes and why, the evidence (profile, roofline, bottleneck.json), and which metric\n"
    "# should move and how far.\n"
    'hypothesis: "TODO"\n'
    'rationale: "TODO"\n'
    'expected: "TODO"\n'
    "target_class: all\n"
    "# strategy: an id from kopt/analysis/data/strategies.yaml (see `kopt experience recommend`)\n"
)
# `kopt eval`'s exit codes (2: kopt itself could not run it)
EXIT = {"kept": 0, "discarded": 10, "split-recommended": 11, "incorrect": 12, "failed": 13, "stopped": 14}


def _kopt_args(a) -> str:
    """The --workspace / --results words a printed kopt command needs to reach this tree."""
    return ("" if a.workspace_default else f" --workspace {a.workspace}") + (
        "" if a.results == "results" else f" --results {a.results}"
    )


def state_of(a, ws, upto: str | None = None) -> dict:
    """The record after the last version, or after ``upto`` (the drafts count only after the last)."""
    names = [v.name for v in ws.versions]
    if upto is not None and upto != names[-1]:
        names, drafts = names[: names.index(upto) + 1], []
    else:
        drafts = ws.drafts
    st = record(a.results, names, drafts, can_split=ws.command is None)
    if st["next"].get("command"):
        st["next"]["command"] += _kopt_args(a)
    return st


def cmd_status(a) -> int:
    ws, _ = owned(a)
    st = state_of(a, ws)
    if a.json:
        print(json.dumps(st, indent=1))
        return 0
    print(f"workspace {ws.root}: versions {ws.versions[0].name}..{ws.versions[-1].name}")
    if ws.drafts:
        print(f"drafts (skipped until their TODO fields are filled in): {', '.join(ws.drafts)}")
    if st["after"] is None:
        print("no results yet")
    else:
        print(f"best: {st.get('best')}  (state after {st['after']})")
        print(f"consecutive regressions: {st.get('consecutive_regressions', 0)}")
        if st.get("repairs"):
            print(f"failed repairs per proposal: {st['repairs']}; abandoned: {st.get('abandoned', [])}")
        if st.get("masked"):
            print(f"masked: {st['masked']}")
        for cls, c in st["classes"].items():
            gap = "" if c.get("gap") is None else f", {100 * c['gap']:.1f} pts short of the roofline target"
            print(f"  {cls}: {c.get('time_us', '-')} µs, {c.get('bottleneck', '-')}{gap}")
    print("next: " + describe_next(st["next"]))
    return 0


def cmd_eval(a) -> int:
    """Run the graph up to a version and print its verdict on one screen, as soon as compare.json
    is written (the profiles, bottlenecks and state of the last version follow); the exit code says it."""
    ws, command = owned(a)
    if not a.version and ws.drafts:
        d = ws.drafts[0]
        raise WorkspaceError(
            f"{ws.root}/kernels/{d}.yaml: {d} is a draft (TODO fields): fill it in, or name the version to evaluate"
        )
    v = a.version or ws.versions[-1].name
    ws.version(v)  # a draft or an unknown version is refused here, with the reason
    log = Path(a.results) / "logs" / f"eval-{v}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("")
    if not _graph(a, command, f"results/{v}/compare.json", log):
        return 2
    comp = json.loads((Path(a.results) / v / "compare.json").read_text())
    print(f"{v}: {comp['decision']} ({comp['reason']})" + (f": {comp['detail']}" if comp.get("detail") else ""))
    for c in comp.get("per_class") or []:
        if c.get("delta_pct") is not None:
            print(f"  {c['class']}: {c['delta_pct']:+.2f}% ({c['basis']}), {c['verdict']}")
    sys.stdout.flush()
    # what the state reads after the verdict: every profile up to the last version (state.json), else
    # the best's bottleneck.json (the roofline target's stop, kopt.loop.state.target_stop)
    last = v == ws.versions[-1].name
    after = "results/state.json" if last else f"results/{comp.get('best_after') or v}/bottleneck.json"
    if not _graph(a, command, after, log):
        return 2
    st = state_of(a, load_workspace(a.workspace), upto=v)
    print("next: " + describe_next(st["next"]))
    return EXIT[outcome(comp, st)]


def _graph(a, command: str, target: str, log: Path) -> bool:
    """Snakemake on ``target``, its output appended to ``log``; False (and why, on stderr) when it failed."""
    words = shlex.split(for_target(command, target))
    words = [sys.executable, "-m", "snakemake", *words[1:], *a.config]
    with open(log, "a") as f:
        rc = subprocess.run(words, stdout=f, stderr=subprocess.STDOUT).returncode
    if rc in (0, NO_BASELINE_EXIT):  # that one: the graph ran, and the verdict says why
        return True
    lines = log.read_text().splitlines()
    said = [ln for ln in lines if ln.startswith("kopt:")] or lines[-15:]
    print("\n".join(said) + f"\nkopt: the graph failed (Snakemake exit {rc}); its log: {log}", file=sys.stderr)
    return False


def outcome(comp: dict, st: dict) -> str:
    """One word for `kopt eval`'s exit code."""
    if st.get("stop"):
        return "stopped"
    decision, reason = comp["decision"], comp.get("reason")
    if decision in ("keep", "baseline"):
        return "kept"
    if decision == "split-recommended":
        return "split-recommended"
    if reason == "incorrect":
        return "incorrect"
    if reason == "failed" or decision == "skipped":
        return "failed"
    return "discarded"


def cmd_new(a) -> int:
    ws, command = owned(a)
    if ws.drafts:
        d = ws.drafts[0]
        raise WorkspaceError(f"{ws.root}/kernels/{d}.yaml: {d} is still a draft: fill it in (or delete it) first")
    st = state_of(a, ws)
    n = len(ws.versions)
    if a.split:
        return _new_split(a, ws, st, n)
    if a.repair:
        base, meta = _repair_meta(a, ws, st, a.repair)
    else:
        base = a.from_version or st["best"]
        if base is None:
            raise WorkspaceError(
                f"{a.results}: no correct version to start from yet (next: {describe_next(st['next'])}); "
                "or name one with --from"
            )
        meta = f"parent: {base}\n" + NEW_META
    if ws.command is not None:
        return _new_attempt(ws, Path(a.results), base, n, command, meta)
    src = ws.version(base)
    if src.kind == "dispatch" and a.repair:
        meta = {**yaml.safe_load(meta), "dispatch": src.meta["dispatch"]}
        return _write_yaml_version(a, ws, n, meta, f"a repair of {base}")
    if src.kind == "dispatch":
        if a.from_version:
            raise WorkspaceError(f"{src.meta_path}: {base} is a dispatching version; start from one of its kernels")
        base = src.meta["dispatch"][-1]["use"]  # its default route's kernel
        print(f"the best, {src.name}, is a dispatch: starting from {base}, the kernel of its default route (or --from)")
        src, meta = ws.version(base), f"parent: {base}\n" + NEW_META
    kdir = ws.root / "kernels"
    new_k, new_yaml = kdir / f"v{n}{src.kernel.suffix}", kdir / f"v{n}.yaml"
    shutil.copy(src.kernel, new_k)
    new_yaml.write_text(meta)
    print(f"wrote {new_k} (a copy of {base}) and {new_yaml}; edit both, then: kopt eval v{n}{_kopt_args(a)}")
    print(f"  (or the graph itself: {for_target(command, f'results/v{n}/compare.json')})")
    return 0


def _repair_meta(a, ws, st: dict, broken: str) -> tuple[str, str]:
    """The kernel to start from (the broken version) and the metadata of a repair of its proposal."""
    p = Path(a.results) / broken / "compare.json"
    comp = json.loads(p.read_text()) if p.is_file() else {}
    if comp.get("reason") not in ("incorrect", "failed"):
        raise WorkspaceError(f"{p}: {broken} is not incorrect or failed, so there is nothing to repair")
    proposal = comp.get("repair_of") or broken
    attempt = st.get("repairs", {}).get(proposal, 0) + 1
    if proposal in st.get("abandoned", []) or attempt > MAX_REPAIRS:
        raise WorkspaceError(f"{proposal} was abandoned after {MAX_REPAIRS} failed repairs: start a new hypothesis")
    if st and proposal not in st.get("broken", []):  # a passing repair closed it: the fold would refuse this one
        raise WorkspaceError(
            f"{proposal} was repaired already (a passing repair of it was judged): start a new hypothesis"
        )
    pm = ws.version(proposal).meta
    meta = {k: pm[k] for k in ("parent", "hypothesis", "expected", "target_class", "strategy") if k in pm}
    meta["repair_of"] = proposal
    meta["rationale"] = (
        f"TODO: what was wrong and what this changes (repair {attempt} of {MAX_REPAIRS}; {broken}: {comp.get('detail')})"
    )
    return broken, yaml.safe_dump(meta, sort_keys=False, width=1000)


def _new_split(a, ws, st: dict, n: int) -> int:
    """kernels/vN.yaml: the dispatch the last comparison proposed (no kernel of its own)."""
    last = st.get("last") or {}
    p = Path(a.results) / str(last.get("version")) / "compare.json"
    if last.get("decision") != "split-recommended" or ws.command is not None:
        raise WorkspaceError(f"{p}: the last comparison proposed no split (it was {last.get('decision')})")
    split = json.loads(p.read_text())["split"]
    cand, best = last["version"], split["dispatch"][-1]["use"]
    meta = {
        "parent": best,
        "hypothesis": f"Dispatch {', '.join(split['improved'])} to {cand} and the rest to {best}",
        "rationale": f"{cand}'s comparison: {last['detail']}",
        "expected": "every class at the time of the kernel that serves it best",
        "dispatch": split["dispatch"],
    }
    return _write_yaml_version(a, ws, n, meta, f"the dispatch {cand}'s comparison proposed")


def _write_yaml_version(a, ws, n: int, meta: dict, what: str) -> int:
    """kernels/vN.yaml alone: a dispatching version (no kernel file of its own)."""
    path = ws.root / "kernels" / f"v{n}.yaml"
    path.write_text(yaml.safe_dump(meta, sort_keys=False, width=1000))
    print(f"wrote {path} ({what}); then: kopt eval v{n}{_kopt_args(a)}")
    return 0


def _new_attempt(ws, results: Path, base: str, n: int, command: str, meta: str) -> int:
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
    path = ws.root / "kernels" / f"v{n}.yaml"
    path.write_text(f"commit: {branch}\n" + meta)
    print(f"made branch {branch} at {base}'s code, checked out in {dest}, and wrote {path}.")
    print(f"Commit your change on {branch} there, fill in {path.name}, then:")
    print(f"  {for_target(command, f'results/v{n}/compare.json')}")
    return 0


def set_mask(a, value: bool) -> int:
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
