"""kopt/report's source: no long function, and no roofline target of its own."""

import ast
from pathlib import Path

from tests.helpers import ROOT

REPORT = ROOT / "kopt" / "report"


def _functions(path: Path):
    tree = ast.parse(path.read_text())
    return [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def test_no_report_function_is_long():
    long = [
        f"{p.name}:{f.name} ({f.end_lineno - f.lineno + 1} lines)"
        for p in REPORT.glob("*.py")
        for f in _functions(p)
        if f.end_lineno - f.lineno + 1 > 60
    ]
    assert not long, long


def test_the_reports_hold_no_target_of_their_own():
    consts = [
        f"{p.name}:{n.lineno}"
        for p in REPORT.glob("*.py")
        for n in ast.walk(ast.parse(p.read_text()))
        if isinstance(n, ast.Constant) and isinstance(n.value, float) and n.value == 0.9
    ]
    assert not consts, consts
    assert not [p.name for p in (REPORT / "templates").glob("*.j2") if "90%" in p.read_text()]
