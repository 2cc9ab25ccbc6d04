"""``kopt init DIR --gpumode PROBLEM_DIR``: a workspace from a gpu-mode reference-kernels problem.

It copies the files ``task.yml`` lists (``reference.py``, ``task.py``, ``utils.py``, ...; not
the submission, not ``eval.py``, whose work kernel-opt does) into ``problem/``, writes a ``ref.py``
handing them to kopt.formats.gpumode, the problem's ``submission.py`` as ``kernels/v0.py`` (with
``v0.yaml``) and ``target.yaml``: ``benchmarks`` without their seeds are the GPU configs, ``tests``
without theirs the CPU configs (the interpreter's; on a GPU the gate runs on the benchmarks'
configs themselves), the tolerance ``check_implementation``'s. It says what it inferred, the
outputs too (``ref_kernel`` run on task.yml's first test, in a process of its own); what it cannot
map is one line naming the file, and nothing is written.
"""

from __future__ import annotations

import ast
import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from kopt.formats import gpumode_cpu, gpumode_precision, princeton, staged
from kopt.formats.gpumode import Problem, ProblemError, load_reference, on_the_harness_device
from kopt.formats.gpumode_hardware import unjudgeable
from kopt.formats.gpumode_tolerance import checks_properties, run_time_callees, tolerances

REF = '''"""gpu-mode problem {name}, made into a kernel-opt reference by `kopt init --gpumode`: problem/
holds its files, verbatim; kopt.formats.gpumode says how its specs, data and output reach setup()
and reference()."""

from pathlib import Path

from kopt.formats.gpumode import Problem

_problem = Problem(Path(__file__).with_name("problem"))
setup, reference = _problem.setup, _problem.reference
casts_returned_floats = True  # its check compares values (dtypes promoted): a float32 result of a float64 ref_kernel
'''
# a check_implementation that judges the output's properties (never ref_kernel's result) judges every call
OWN_CHECK = """check_outputs = _problem.check  # check_implementation judges each call's outputs itself (their properties)
"""

META = """parent: null
hypothesis: "Baseline: the problem's own submission.py (custom_kernel), as it is."
rationale: "The version to beat: a kernels/v1.py defining custom_kernel(data), or a run_kernel of your own."
expected: "What the submission gives at the benchmarks' sizes."
target_class: all
"""


def _specs(task: dict, key: str, source: Path, defaults: dict) -> list[dict]:
    """task.yml's ``key`` specs without their seeds, each once (seeds were all that told some apart);
    an argument some specs leave out takes generate_input's default there (linalg's ``case``), so
    every config has the same columns."""
    specs = []
    for s in task.get(key) or []:
        spec = {k: v for k, v in (s or {}).items() if k != "seed"} if isinstance(s, dict) else None
        if spec not in specs:
            specs.append(spec)
    if not specs or not all(specs):
        raise ProblemError(f"{source}: no {key} (each a spec of generate_input's arguments and a seed)")
    names = list(dict.fromkeys(k for sp in specs for k in sp))
    specs = [{k: sp[k] if k in sp else defaults.get(k, sp.get(k)) for k in names} for sp in specs]
    if any(v is None for sp in specs for v in sp.values()):
        raise ProblemError(
            f"{source}: its {key} name different arguments, and generate_input has no default for those some leave "
            "out; kernel-opt's configs share their columns"
        )
    bad = [k for k, v in specs[0].items() if not isinstance(v, (int, float, str, bool))]
    if bad:
        raise ProblemError(f"{source}: {key} argument {bad[0]!r} is not a number or a word (a config's column)")
    return specs


def _generate_input_defaults(reference_py: Path) -> dict:
    """generate_input's arguments that have a literal default, read from its source."""
    try:
        tree = ast.parse(reference_py.read_text())
    except (OSError, SyntaxError):
        return {}  # said where the file is loaded
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "generate_input"), None)
    if fn is None:
        return {}
    args = fn.args.args[len(fn.args.args) - len(fn.args.defaults) :]
    pairs = [*zip(args, fn.args.defaults, strict=True), *zip(fn.args.kwonlyargs, fn.args.kw_defaults, strict=True)]
    out = {}
    for a, d in pairs:
        try:
            out[a.arg] = ast.literal_eval(d) if d is not None else None
        except ValueError:
            continue
    return {k: v for k, v in out.items() if v is not None}


def _check_problem(folder: Path, configs: list[dict], submission: Path) -> None:
    """The problem's reference loads, its generate_input takes the specs' arguments and a seed, and
    its submission defines custom_kernel: else one line, before anything is written."""
    import inspect

    mod = load_reference(folder)
    params = inspect.signature(mod.generate_input).parameters
    wanted = [*configs[0], "seed"]
    missing = [k for k in wanted if k not in params]
    extra = [
        k for k, p in params.items() if k not in wanted and p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD
    ]
    if missing or extra:
        raise ProblemError(
            f"{folder / 'reference.py'}: generate_input{inspect.signature(mod.generate_input)} does not take "
            f"task.yml's arguments {wanted}"
        )
    try:
        tree = ast.parse(submission.read_text())
    except SyntaxError as e:
        raise ProblemError(f"{submission}: does not parse (line {e.lineno}: {e.msg})") from None
    if princeton.is_princeton_file(folder / "reference.py"):
        steps = princeton.phases(folder / "reference.py")
        missing = [p for p in steps if not any(f.endswith("_" + p) for f in _defined(tree))]
        if missing:
            raise ProblemError(f"{submission}: defines no function for phase(s) {missing} (a def named <name>_<phase>)")
    elif not _binds_custom_kernel(tree):
        raise ProblemError(
            f"{submission}: defines no custom_kernel(data) (a def, an assignment such as "
            "custom_kernel = torch.compile(fn), or an import of that name)"
        )


def _defined(tree: ast.Module) -> list[str]:
    return [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _binds_custom_kernel(tree: ast.Module) -> bool:
    """The submission defines ``custom_kernel``: a def (anywhere), or at module level an assignment
    (``custom_kernel = torch.compile(fn)``) or an import binding that name."""
    if any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == "custom_kernel" for n in ast.walk(tree)
    ):
        return True
    for n in tree.body:
        if isinstance(n, ast.Assign):
            bound = [e for t in n.targets for e in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t])]
        elif isinstance(n, (ast.AnnAssign, ast.AugAssign)):
            bound = [n.target]
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == "custom_kernel" for a in n.names):
                return True
            continue
        else:
            continue
        if any(isinstance(e, ast.Name) and e.id == "custom_kernel" for e in bound):
            return True
    return False


# how long the survey may run at init: the CPU configs' timing and the outputs' check (a big test
# on a CPU takes minutes)
SURVEY_S = 120
MARK, SURVEY = "kopt-gpumode-outputs: ", "kopt-gpumode-survey: "


def _survey_here(folder: Path, specs: list[dict]) -> tuple[list[dict], list[str], str]:
    """The CPU configs (kopt.formats.gpumode_cpu: the tests timed, the fast ones and one of each
    kind), what was changed, and the outputs kopt finds for the first; run here in a process of its
    own for at most SURVEY_S. What it cannot map (ref_kernel's result is not tensors) is one line;
    a problem this machine cannot run (its code needs a GPU library) keeps every test, and its
    outputs are found where kopt runs it."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH")])),
    }
    code = (
        f"from kopt.formats.gpumode_workspace import print_survey; print_survey({str(folder)!r}, {json.dumps(specs)!r})"
    )
    try:
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=SURVEY_S, env=env)
        out, ended = run.stdout, f"exit status {run.returncode}"
        err = run.stderr
    except subprocess.TimeoutExpired as e:
        out, ended, err = _text(e.stdout), f"ran over {SURVEY_S} s", ""
    said = [json.loads(line[len(SURVEY) :]) for line in out.splitlines() if line.startswith(SURVEY)]
    marked = [json.loads(line[len(MARK) :]) for line in out.splitlines() if line.startswith(MARK)]
    if marked and "problem" in marked[-1]:
        raise ProblemError(marked[-1]["problem"])
    kept, notes = gpumode_cpu.choose(specs, said) if said else (specs, [])
    if not kept:
        limit = gpumode_cpu.LIMIT_S
        kept, notes = (
            specs,
            [f"every test kept on the CPU: none ran here, halved or not (each failed or took over {limit:g} s)"],
        )
    elif notes:
        notes.insert(
            0, "chosen by timing setup() on the machine `kopt init` ran on (its speed and load decide; edit them)"
        )
    if not marked:
        why = " ".join((err.strip().splitlines() or [ended])[-1].split())[:200]
        return kept, notes, f"outputs: not found here (the check's process ended: {why}); found where kopt runs it"
    if "error" in marked[-1]:
        return kept, notes, f"outputs: not found on this machine ({marked[-1]['error']}); found where kopt runs it"
    line = f"outputs (ref_kernel's, in its order, for {kept[0]}): {marked[-1]['outputs']}"
    if marked[-1].get("scratch"):  # zeroed for every call, never compared: said, for the user to check
        line += (
            f"; scratch (ref_kernel never reads them: zeroed for every call, never compared): {marked[-1]['scratch']}"
        )
    return kept, notes, line


def _text(b) -> str:
    return b.decode("utf-8", "replace") if isinstance(b, bytes) else (b or "")


def print_survey(folder: str, specs_json: str) -> None:
    """The process of ``_survey_here``: the survey's lines, then one marked JSON line, the outputs
    of the first CPU config or why there are none."""
    specs = json.loads(specs_json)
    said: list[dict] = []

    def say(d: dict) -> None:
        said.append(d)
        print(SURVEY + json.dumps(d), flush=True)

    try:
        problem = Problem(Path(folder))
        # reference.py and what the first setup() imports (the problem's utils' deterministic
        # context imports Dynamo, 2-3 s) loaded here once, no operation run: no test's time holds
        # them, and each test is timed in a process forked from this one (a fork after torch's
        # thread pool started can hang)
        with on_the_harness_device():
            problem.mod  # noqa: B018 - loaded now
        import torch._inductor  # noqa: F401

        gpumode_cpu.survey(problem.setup, specs, say, fatal=(ProblemError,))
        kept, _ = gpumode_cpu.choose(specs, said)
        # where none ran here, the cheapest as it is: its outputs, or the error that stopped them all
        first = kept[0] if kept else min(specs, key=gpumode_cpu.cost)
        drawn = problem.setup(seed=0, **first)
        said_out = {"outputs": drawn["outputs"], "scratch": drawn["scratch"]}
    except (ProblemError, gpumode_cpu.Fatal) as e:
        said_out = {"problem": str(e)}
    except Exception as e:  # noqa: BLE001 - the problem's own code, run on this machine
        said_out = {"error": " ".join(f"{type(e).__name__}: {e}".split())[:200]}
    print(MARK + json.dumps(said_out), flush=True)


def _class_by(configs: list[dict]) -> list[str]:
    """The spec key that varies with the fewest distinct values (else the first key)."""
    keys = list(configs[0])
    varying = sorted((len({str(c.get(k)) for c in configs}), i, k) for i, k in enumerate(keys))
    varying = [v for v in varying if v[0] > 1]
    return [varying[0][2]] if varying else keys[:1]


def _files(task: dict, folder: Path) -> dict[str, Path]:
    """The problem's files by name, as task.yml lists them (its submission and eval.py aside)."""
    out = {}
    for f in task.get("files") or []:
        name, src = f.get("name"), str(f.get("source", ""))
        if name in ("submission.py", "eval.py") or src.startswith("@"):
            continue
        path = (folder / src).resolve()
        if not path.is_file():
            raise ProblemError(f"{folder / 'task.yml'}: lists {name} from {src}, which is not there")
        out[name] = path
    if "reference.py" not in out:
        out["reference.py"] = folder / "reference.py"
    return out


def init(dest: Path, folder: Path, check=None) -> list[str]:
    """The workspace at ``dest`` (absent or empty); what it inferred, as lines."""
    folder = folder.resolve()
    task_yml = folder / "task.yml"
    try:
        task = yaml.safe_load(task_yml.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise ProblemError(f"{task_yml}: not a readable task.yml ({type(e).__name__})") from None
    if not isinstance(task, dict):
        raise ProblemError(f"{task_yml}: not a readable task.yml (not a mapping)")
    files = _files(task, folder)
    submission = folder / "submission.py"
    needs = unjudgeable(folder, task, [*files.values(), submission])
    if needs:
        raise ProblemError(needs)
    defaults = _generate_input_defaults(files["reference.py"])
    configs, small = _specs(task, "benchmarks", task_yml, defaults), _specs(task, "tests", task_yml, defaults)
    phased = princeton.is_princeton_file(files["reference.py"])
    if phased:  # one function per phase, its batch fixed by eval.py (kopt.formats.princeton)
        configs, small = (
            princeton.with_batch(configs, princeton.eval_batch(folder)),
            princeton.with_batch(small, princeton.CPU_BATCH),
        )
    if not submission.is_file():
        raise ProblemError(f"{submission}: missing (v0 is the problem's own submission)")
    tols, how = tolerances(files["reference.py"], files.get("utils.py", folder / "utils.py"))
    batch_note = _BATCH_NOTE.format(gpu=configs[0][princeton.BATCH], cpu=princeton.CPU_BATCH) if phased else ""
    with staged(dest, check) as staging:
        (staging / "problem").mkdir()
        for name, src in files.items():
            shutil.copyfile(src, staging / "problem" / name)
        shutil.copyfile(task_yml, staging / "problem" / "task.yml")
        own_check = checks_properties(ast.parse(files["reference.py"].read_text()))
        (staging / "ref.py").write_text(REF.format(name=folder.name) + (OWN_CHECK if own_check else ""))
        shutil.copyfile(submission, staging / "kernels" / "v0.py")
        (staging / "kernels" / "v0.yaml").write_text(META)
        with _naming_the_users_files(staging / "problem", files, folder):
            _check_problem(staging / "problem", configs, submission)
            small, changed, outputs = _survey_here(staging / "problem", small)
            if not own_check and not run_time_callees(files["reference.py"]):  # else the problem's own check decides
                tols, at_sizes = gpumode_precision.checked(staging / "problem", configs, tols)
                how += f"; at the benchmarks' sizes: {at_sizes}"
        doc = {
            "name": folder.name,
            "class_by": _class_by(configs),
            "configs": configs,
            "cpu_configs": small,
            "tolerances": tols,
            "seeds": 3,
        }
        head = (
            f"# Made by `kopt init --gpumode` from {folder}.\n"
            "# configs: task.yml's benchmarks, cpu_configs: its tests (each without its seed: kernel-opt draws\n"
            f"# fresh ones). tolerances: {how}.\n"
        ) + batch_note
        head += "".join(f"# cpu_configs: {line}.\n" for line in changed)
        (staging / "target.yaml").write_text(head + yaml.safe_dump(doc, sort_keys=False))
    kernel = "one function per phase, judged as one call of them all" if phased else "custom_kernel"
    return [
        f"{dest}: gpu-mode problem {folder.name} ({', '.join(sorted(files))} in problem/)",
        f"  GPU configs (benchmarks): {len(configs)}; CPU configs (tests): {len(small)}; classes by {doc['class_by']}",
        *(f"  CPU configs: {line}" for line in changed),
        *([f"  {batch_note.strip('# ').strip()}"] if phased else []),
        f"  {outputs}",
        f"  tolerance: {how}; v0: its submission.py ({kernel})",
    ]


_BATCH_NOTE = "# batch_size: eval.py's B ({gpu}) on the GPU, {cpu} on the CPU (the interpreter's configs).\n"


@contextlib.contextmanager
def _naming_the_users_files(copies: Path, files: dict[str, Path], folder: Path):
    """A ProblemError about the staged copies names the user's files instead."""
    try:
        yield
    except ProblemError as e:
        line = str(e)
        for name, src in files.items():
            line = line.replace(str(copies / name), str(src))
        raise ProblemError(line.replace(str(copies), str(folder))) from None
