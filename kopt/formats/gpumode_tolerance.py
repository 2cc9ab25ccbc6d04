"""A gpu-mode problem's tolerance (trusted side: the user's own problem): what its
``check_implementation`` compares with.

Read from reference.py's source where it names numbers: ``make_match_reference(ref_kernel,
rtol=, atol=)``'s, or the comparisons of a check of its own (their defaults from utils.py's
``match_reference``), the widest where it compares several times. Where a comparison's tolerance is
computed at run time (prefixsum's ``rtol = 1e-5 * n ** 0.5``, ``n`` the data's size), it is
evaluated on each config's data (``run_time_tolerance``): ``check_implementation`` runs with that
comparison replaced by one that only records the tolerance it was given, and ``setup()`` hands it
to the judge with the draw (kopt.measure.reference)."""

from __future__ import annotations

import ast
import contextlib
import math
from pathlib import Path

from kopt.formats import princeton
from kopt.formats.gpumode import ProblemError

# gpu-mode compares with ref_kernel's output at the output's dtype, kernel-opt with a float64
# reference: a half-precision output is one rounding off it. Its tolerance is at least this.
HALF_ULP = {"float16": {"rtol": 1e-3, "atol": 1e-5}, "bfloat16": {"rtol": 8e-3, "atol": 1e-5}}


def tolerances(reference_py: Path, utils_py: Path) -> tuple[dict, str]:
    """target.yaml's tolerances: ``check_implementation``'s (``default``), and for half-precision
    outputs at least one rounding of theirs (HALF_ULP); how it was found."""
    tol, how = tolerance(reference_py, utils_py)
    out = {"default": tol}
    for dtype, least in HALF_ULP.items():
        out[dtype] = {k: max(tol[k], least[k]) for k in ("atol", "rtol")}
    return out, how + "; float16 and bfloat16 outputs at least one rounding (a float64 reference)"


def tolerance(reference_py: Path, utils_py: Path) -> tuple[dict, str]:
    """``check_implementation``'s tolerance (else exact) and how it was found; one computed at run
    time reads 0 here (each config's data gives it: ``run_time_tolerance``)."""
    tree = ast.parse(reference_py.read_text())
    if princeton.is_princeton(tree):
        return princeton.tolerance(tree, reference_py)
    if checks_properties(tree):
        return {"atol": 0.0, "rtol": 0.0}, (
            "check_implementation checks properties of the output and never reads ref_kernel's result: it judges "
            "every call itself (ref.py's check_outputs)"
        )
    calls, where = _comparisons(tree)
    if not calls:
        return {"atol": 0.0, "rtol": 0.0}, "check_implementation compares for equality: exact"
    late = [f"{k.arg}={ast.unparse(k.value)}" for c in calls for k in c.keywords if _computed(k)]
    if late:
        return {"atol": 0.0, "rtol": 0.0}, (
            f"{where}: computed at run time ({', '.join(late)}), evaluated on each config's data by its own "
            "check_implementation"
        )
    tols = [_call_tolerance(c, _defaults(utils_py)) for c in calls]
    tol = {k: max(t[k] for t in tols) for k in ("rtol", "atol")}
    several = f" (the widest of {len(calls)} comparisons)" if len({tuple(t.values()) for t in tols}) > 1 else ""
    return tol, f"{where}: rtol {tol['rtol']:g}, atol {tol['atol']:g}{several}"


def checks_properties(tree: ast.Module) -> bool:
    """A ``check_implementation`` of the problem's own (a ``def``) that never calls ``ref_kernel``,
    itself or through reference.py's other functions: it judges the output by its properties
    (linalg's Cholesky, QR and eigh: residuals of the factorization, whose factors are unique only
    up to signs), or against a result of its own making: no element-wise comparison with
    ref_kernel's result stands in for it."""
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    if "check_implementation" not in defs:
        return False
    seen, todo = set(), ["check_implementation"]
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        todo += [n.id for n in ast.walk(defs[name]) if isinstance(n, ast.Name)]
    return "ref_kernel" not in seen


def run_time_callees(reference_py: Path) -> list[str]:
    """The names of the comparisons whose tolerance is computed at run time (none: read from the source)."""
    calls, _ = _comparisons(ast.parse(reference_py.read_text()))
    return list(dict.fromkeys(_callee(c) for c in calls if any(_computed(k) for k in c.keywords)))


class _Given(BaseException):  # noqa: N818 - not an error: the comparison's arguments, carried out (past
    # an ``except Exception`` of the check's own)
    def __init__(self, kwargs: dict):
        super().__init__()
        self.kwargs = kwargs


def run_time_tolerance(mod, data, output, callees: list[str], reference_py: Path, defaults: dict) -> dict:
    """``check_implementation(data, output)`` (``output``: ref_kernel's own, as a check of several
    outputs indexes it) with the comparisons ``callees`` (names in ``mod``) replaced by one that
    records the ``rtol`` and ``atol`` it is given (``defaults`` for one it leaves out) and stops
    there: the first such comparison's."""

    def given(*args, **kwargs):
        raise _Given(kwargs)

    try:
        with _replaced(mod, callees, given):
            mod.check_implementation(data, output)
    except _Given as g:
        tol = {k: g.kwargs.get(k, defaults[k]) for k in ("rtol", "atol")}
        if all(_number(v) and v >= 0 for v in tol.values()):
            return {k: float(v) for k, v in tol.items()}
        raise ProblemError(f"{reference_py}: check_implementation's tolerance is not two numbers ({tol})") from None
    except Exception as e:  # noqa: BLE001 - the user's check, run on a stand-in: say what stopped it
        raise ProblemError(
            f"{reference_py}: check_implementation's run-time tolerance could not be evaluated ({type(e).__name__}: "
            f"{e})"
        ) from None
    raise ProblemError(f"{reference_py}: check_implementation never called {', '.join(callees)}")


@contextlib.contextmanager
def _replaced(mod, names: list[str], fn):
    before = {n: getattr(mod, n) for n in names if hasattr(mod, n)}
    if len(before) < len(names):
        raise ProblemError(f"{mod.__file__}: {sorted(set(names) - set(before))} are not names in reference.py")
    for n in names:
        setattr(mod, n, fn)
    try:
        yield
    finally:
        for n, f in before.items():
            setattr(mod, n, f)


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def utils_defaults(reference_py: Path) -> dict:
    """utils.py's ``match_reference`` defaults, beside reference.py (a workspace's problem/)."""
    return _defaults(reference_py.with_name("utils.py"))


def _comparisons(tree: ast.Module) -> tuple[list[ast.Call], str]:
    """``make_match_reference``'s calls, else the comparisons of a check of its own; and which."""
    calls = [
        n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", None) == "make_match_reference"
    ]
    if calls:
        return calls, "make_match_reference's"
    calls = _own_check_calls(tree)
    return calls, f"check_implementation's {', '.join(dict.fromkeys(_callee(c) for c in calls))}"


def _computed(k: ast.keyword) -> bool:
    """A tolerance keyword whose value is no literal number."""
    if k.arg not in ("atol", "rtol"):
        return False
    try:
        float(ast.literal_eval(k.value))
    except (ValueError, TypeError, SyntaxError):
        return True
    return False


def _callee(call: ast.Call) -> str:
    return getattr(call.func, "id", getattr(call.func, "attr", "call"))


def _call_tolerance(call: ast.Call, defaults: dict) -> dict:
    """One comparison's rtol and atol: the numbers it names, else the defaults."""
    tol = dict(defaults)
    for k in call.keywords:
        if k.arg in ("atol", "rtol"):
            tol[k.arg] = float(ast.literal_eval(k.value))
    return tol


def _own_check_calls(tree: ast.Module) -> list[ast.Call]:
    """In a ``check_implementation`` of the problem's own, its comparison calls (naming rtol/atol,
    else the match_reference/allclose calls without them); none when it compares for equality."""
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "check_implementation"), None)
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call)] if fn else []
    named = [c for c in calls if any(k.arg in ("atol", "rtol") for k in c.keywords)]
    close = [c for c in calls if "close" in ast.unparse(c.func) or "match_reference" in ast.unparse(c.func)]
    return named or close


def _defaults(utils_py: Path) -> dict:
    for n in ast.walk(ast.parse(utils_py.read_text())) if utils_py.is_file() else []:
        if isinstance(n, ast.FunctionDef) and n.name == "match_reference":
            args = n.args.args[-len(n.args.defaults) :] if n.args.defaults else []
            got = {a.arg: float(ast.literal_eval(d)) for a, d in zip(args, n.args.defaults, strict=True)}
            return {"rtol": got.get("rtol", 1e-5), "atol": got.get("atol", 1e-8)}
    return {"rtol": 1e-5, "atol": 1e-8}
