"""The kopt command: what is not a graph target.

kopt status [--json]                      the loop state and the next action (as data with --json)
kopt eval [vN]                            run the graph up to vN; one-screen verdict; exit code says it
kopt new [--from vK | --repair vK | --split]   the next version: from the best correct one, a repair, a dispatch
kopt mask vN / kopt unmask vN             take a version out of the fold / back in
kopt rerun vN [--current]                 rerun a past version in a tree of its own and compare
kopt experience add|recommend|search|list|merge|stats ...
kopt init DIR --kernelbench FILE          a workspace from a KernelBench problem file
kopt init DIR --gpumode PROBLEM_DIR       a workspace from a gpu-mode reference-kernels problem
kopt init DIR --repo PATH --command CMD   a workspace of kind command from a repository and its benchmark
kopt init DIR                             a workspace to edit: ref.py, a Triton v0, a CUDA solve, target.yaml
"""

from __future__ import annotations

import argparse
import sys

from kopt.cli import experience, init, loop, rerun
from kopt.cli.common import config_workspace
from kopt.workspace.target import WorkspaceError


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kopt", description="kernel-opt: what is not a graph target")
    sub = p.add_subparsers(dest="cmd", required=True)

    def ws_args(sp):
        sp.add_argument("--workspace", default=None, help="target folder (default: config/config.yaml's)")
        sp.add_argument("--results", default="results", help="results folder (default: results)")

    sp = sub.add_parser("new", help="write the next version's kernel and metadata from the best correct version")
    ws_args(sp)
    how = sp.add_mutually_exclusive_group()
    how.add_argument("--from", dest="from_version", help="start from this version instead of the best")
    how.add_argument("--repair", metavar="VK", help="a repair of the incorrect or failed VK (counts the attempts)")
    how.add_argument("--split", action="store_true", help="the dispatch version the last comparison proposed")
    sp.set_defaults(fn=loop.cmd_new)
    sp = sub.add_parser("status", help="the loop state: best, counters, stop flag, the next action")
    ws_args(sp)
    sp.add_argument("--json", action="store_true", help="the record of results/state.json, with the next action")
    sp.set_defaults(fn=loop.cmd_status)
    codes = ", ".join(f"{code} {word}" for word, code in loop.EXIT.items())
    sp = sub.add_parser("eval", help=f"run the graph up to a version, print its verdict; exit {codes}, 2 error")
    ws_args(sp)
    sp.add_argument("version", nargs="?", help="the version (default: the last)")
    sp.add_argument("--config", nargs="*", default=[], help="more Snakemake --config values (key=value)")
    sp.set_defaults(fn=loop.cmd_eval)
    for name, val in (("mask", True), ("unmask", False)):
        sp = sub.add_parser(name, help=f"{name} a version ({'take it out of' if val else 'put it back into'} the fold)")
        ws_args(sp)
        sp.add_argument("version")
        sp.set_defaults(fn=lambda a, v=val: loop.set_mask(a, v))
    sp = sub.add_parser("rerun", help="rerun a past version in a tree of its own; reproduces (0) or differs (1)")
    ws_args(sp)
    sp.add_argument("version")
    sp.add_argument("--current", action="store_true", help="run the workspace's files as they are now")
    sp.add_argument("--config", nargs="*", default=[], help="more Snakemake --config values (key=value)")
    sp.set_defaults(fn=rerun.cmd_rerun)
    sp = sub.add_parser("init", help="a workspace from a KernelBench problem, a repository, or one to edit")
    sp.add_argument("dir", help="the new workspace's folder (absent or empty)")
    src = sp.add_mutually_exclusive_group()  # neither: a workspace to edit (kopt/formats/template/)
    src.add_argument("--kernelbench", metavar="FILE", help="a KernelBench problem (Model, get_inputs, ...)")
    src.add_argument(
        "--gpumode", metavar="PROBLEM_DIR", help="a gpu-mode reference-kernels problem (task.yml, reference.py)"
    )
    src.add_argument("--repo", metavar="PATH", help="a git repository judged by --command (a target of kind command)")
    sp.add_argument("--command", help="with --repo: the benchmark command, run once to read its CSV's columns")
    sp.add_argument("--csv", metavar="GLOB", help="with --repo: where its CSV lands (default: the one it wrote)")
    sp.add_argument("--time-column", help="with --repo: the kernel's us_* column (default: the one not a reference's)")
    sp.add_argument("--class-by", help="with --repo: config columns, comma-separated (default: the fewest values)")
    sp.set_defaults(fn=init.cmd_init)
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
    x.add_argument("--json", action="store_true", help="the ranking as JSON")
    x = es.add_parser("search", help="entries whose text fields contain TEXT")
    x.add_argument("text")
    x = es.add_parser("list", help="the entries")
    x.add_argument("--limit", type=int, default=None)
    x.add_argument("--priors", action="store_true", help="include the strategies table's priors")
    x = es.add_parser("merge", help="add another store's entries (no duplicates)")
    x.add_argument("other")
    es.add_parser("stats", help="counts by outcome, kernel types, chips")
    ep.set_defaults(fn=experience.cmd_experience)
    return p


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    a.workspace_default = getattr(a, "workspace", "x") is None
    if a.workspace_default:
        a.workspace = config_workspace()
    try:
        return a.fn(a)
    except (WorkspaceError, FileNotFoundError, ValueError) as e:
        print(f"kopt: {e}", file=sys.stderr)
        return 2
