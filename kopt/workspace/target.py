"""Load and validate a target workspace: target.yaml, ref.py, kernels/vN.{py,cu,hip,yaml}.

Pure: yaml + jsonschema only, so the Snakefile can call it at DAG-build time for free.
Every problem is raised as a WorkspaceError whose message is one line naming the file and
the field, e.g. ``examples/x/target.yaml: configs[2].M: 'big' is not of type 'integer'``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

VERSION_RE = re.compile(r"^v(0|[1-9][0-9]*)$")
ALL = "all"
# a version's kernel file, by kind: Triton (Python), CUDA C++ and HIP (compiled, called through solve)
KERNEL_KINDS = {".py": "triton", ".cu": "cuda", ".hip": "hip"}
COMPILED = (".cu", ".hip")


class WorkspaceError(ValueError):
    """A malformed workspace; the message names the file and the field."""


@dataclass(frozen=True)
class Version:
    name: str  # "v3"
    number: int  # 3
    kernel: Path  # kernels/v3.py
    meta_path: Path  # kernels/v3.yaml
    meta: dict[str, Any] = field(hash=False, compare=False)

    @property
    def parent(self) -> str | None:
        return self.meta.get("parent")

    @property
    def hypothesis(self) -> str:
        return self.meta.get("hypothesis", "")

    @property
    def target_classes(self) -> list[str] | None:
        """The targeted config classes, or None for all."""
        tc = self.meta.get("target_class", ALL)
        tcs = [tc] if isinstance(tc, str) else list(tc)
        return None if ALL in tcs else tcs

    @property
    def kind(self) -> str:
        """triton (kernels/vN.py), cuda (vN.cu), hip (vN.hip), dispatch (kernels/vN.yaml routes
        configs to earlier versions) or command (vN.yaml names a commit or a patch)."""
        if self.meta.get("dispatch"):
            return "dispatch"
        if "commit" in self.meta or "patch" in self.meta:
            return "command"
        return KERNEL_KINDS[self.kernel.suffix]

    @property
    def repair_of(self) -> str | None:
        return self.meta.get("repair_of")

    @property
    def masked(self) -> bool:
        return bool(self.meta.get("masked", False))

    @property
    def routes(self) -> list[dict]:
        return list(self.meta.get("dispatch") or [])


@dataclass(frozen=True)
class Workspace:
    root: Path
    name: str
    configs: list[dict[str, Any]]
    cpu_configs: list[dict[str, Any]]
    class_by: list[str]
    tolerances: dict[str, dict[str, float]]
    seeds: int
    dtype_column: str
    versions: list[Version]
    command: Any = None  # kopt.workspace.command.CommandSpec for a target of kind command
    drafts: list[str] = field(default_factory=list)  # the last versions, still saying TODO: not run
    tf32: bool = False  # target.yaml's: torch's TF32 switches on in the kernel's process, float32 held to TF32_TOL

    @property
    def ref(self) -> Path:
        """What versions are judged against: ref.py, or for a command target its target.yaml (the
        fixed command, its CSV and error columns)."""
        return self.target if self.command is not None else self.root / "ref.py"

    @property
    def target(self) -> Path:
        return self.root / "target.yaml"

    def version(self, name: str) -> Version:
        for v in self.versions:
            if v.name == name:
                return v
        if name in self.drafts:
            raise WorkspaceError(
                f"{self.root / 'kernels' / name}.yaml: {name} is a draft (TODO fields): fill them in first"
            )
        raise WorkspaceError(f"{self.root / 'kernels'}: no version {name}")

    def classes(self, configs: list[dict[str, Any]] | None = None) -> list[str]:
        """Config classes in first-seen order."""
        seen: dict[str, None] = {}
        for c in configs if configs is not None else self.configs + self.cpu_configs:
            seen.setdefault(config_class(c, self.class_by), None)
        return list(seen)

    def configs_for(self, device: str) -> list[dict[str, Any]]:
        return self.cpu_configs if device == "cpu" else self.configs

    def tolerance(self, cfg: dict[str, Any]) -> dict[str, float]:
        """The config's tolerance; with ``tf32``, at least TF32_TOL for a float32 config (or one
        without a dtype column: its outputs' dtype decides then, kopt.measure.verify)."""
        tol = self.tolerances[str(cfg.get(self.dtype_column, "default"))]
        float32 = str(cfg.get(self.dtype_column, "float32")) in ("float32", "fp32")
        return _widest(tol, TF32_TOL) if self.tf32 and float32 else tol

    def output_tolerances(self) -> dict[str, dict[str, float]]:
        """Per output dtype; with ``tf32``, float32 outputs at least TF32_TOL."""
        if not self.tf32:
            return self.tolerances
        return {**self.tolerances, "float32": _widest(self.tolerances.get("float32"), TF32_TOL)}


def config_key(cfg: dict[str, Any]) -> str:
    """A stable, readable id of one config: 'M=4096,N=1024,dtype=float32'."""
    return ",".join(f"{k}={cfg[k]}" for k in cfg)


def config_class(cfg: dict[str, Any], class_by: list[str]) -> str:
    return ",".join(f"{k}={cfg[k]}" for k in class_by)


@lru_cache(maxsize=None)
def _schema(name: str) -> dict:
    text = resources.files("kopt.workspace").joinpath("schemas", name).read_text()
    return yaml.safe_load(text)


def _where(path) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(top level)"


def validate(data: Any, schema_name: str, file: Path) -> dict:
    """Validate ``data`` against a bundled schema, fill defaults, and raise one clear line."""
    schema = _schema(schema_name)
    validator = jsonschema.Draft7Validator(schema)
    err = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if err is not None:
        raise WorkspaceError(f"{file}: {_where(err.absolute_path)}: {err.message}")
    for key, spec in schema.get("properties", {}).items():
        if "default" in spec and key not in data:
            data[key] = spec["default"]
    return data


def _read_yaml(file: Path) -> Any:
    if not file.is_file():
        raise WorkspaceError(f"{file}: file is missing")
    try:
        return yaml.safe_load(file.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else "(parse)"
        raise WorkspaceError(f"{file}: {where}: not valid YAML ({getattr(e, 'problem', e)})") from None


def load_target(root: Path) -> dict:
    file = root / "target.yaml"
    data = _read_yaml(file)
    if not isinstance(data, dict):
        raise WorkspaceError(f"{file}: (top level): must be a mapping, got {type(data).__name__}")
    validate(data, "target.schema.yaml", file)
    for listname in ("configs", "cpu_configs"):
        keys = None
        for i, cfg in enumerate(data[listname]):
            if "seed" in cfg:
                raise WorkspaceError(
                    f"{file}: {listname}[{i}]: 'seed' cannot be a config column: kopt passes setup() a fresh seed"
                )
            for col in data["class_by"]:
                if col not in cfg:
                    raise WorkspaceError(f"{file}: {listname}[{i}]: lacks class_by column '{col}'")
            dt = str(cfg.get(data["dtype_column"], "default"))
            if dt not in data["tolerances"]:
                raise WorkspaceError(
                    f"{file}: {listname}[{i}].{data['dtype_column']}: no tolerance for dtype '{dt}' "
                    f"(tolerances has {sorted(data['tolerances'])})"
                )
            if keys is None:
                keys = list(cfg)
            elif list(cfg) != keys:
                raise WorkspaceError(f"{file}: {listname}[{i}]: columns {list(cfg)} differ from {listname}[0]'s {keys}")
        dup = _first_duplicate(config_key(c) for c in data[listname])
        if dup:
            raise WorkspaceError(f"{file}: {listname}: config {dup} appears twice")
    return data


def _first_duplicate(items) -> str | None:
    seen = set()
    for x in items:
        if x in seen:
            return x
        seen.add(x)
    return None


def _check_dispatch(meta: dict, meta_path: Path, n: int, configs: list[dict]) -> None:
    routes = meta.get("dispatch") or []
    columns = {k for cfg in configs for k in cfg}
    for i, r in enumerate(routes):
        if int(r["use"][1:]) >= n:
            raise WorkspaceError(f"{meta_path}: dispatch[{i}].use: {r['use']} is not an earlier version")
        last = i == len(routes) - 1
        if last and "when" in r:
            raise WorkspaceError(f"{meta_path}: dispatch[{i}]: the last entry is the default (no 'when')")
        if not last and "when" not in r:
            raise WorkspaceError(f"{meta_path}: dispatch[{i}]: only the last entry may omit 'when'")
        for col in r.get("when", {}):
            if columns and col not in columns:
                raise WorkspaceError(
                    f"{meta_path}: dispatch[{i}].when: '{col}' is not a config column {sorted(columns)}"
                )
        if configs and "when" in r and not any(_matches(r["when"], c) for c in configs):
            raise WorkspaceError(f"{meta_path}: dispatch[{i}].when: {r['when']} matches no config of target.yaml")


def version_kernel(kdir: Path, name: str) -> Path:
    """The file that runs version ``name``: kernels/vN.py, .cu or .hip, else (a dispatching
    version) kernels/vN.yaml."""
    for suffix in KERNEL_KINDS:
        if (kdir / f"{name}{suffix}").is_file():
            return kdir / f"{name}{suffix}"
    return kdir / f"{name}.yaml"


# a local header of a CUDA/HIP source: #include "name" (angle brackets are the toolkit's or the system's)
LOCAL_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*"([^"]+)"', re.MULTILINE)


def local_headers(source: str | Path) -> list[Path]:
    """The headers a CUDA/HIP source includes with quotes, found next to the file that includes
    them, followed through: what its build reads besides itself. One that is not there is left to
    the compiler, which names it."""
    out: list[Path] = []
    todo = [Path(source)]
    while todo:
        f = todo.pop()
        for name in LOCAL_INCLUDE.findall(f.read_text(errors="replace")):
            h = Path(os.path.normpath(f.parent / name))
            if h.is_file() and h not in out and h != Path(source):
                out.append(h)
                todo.append(h)
    return out


def kernel_files(kernel: str | Path) -> list[Path]:
    """Every file a version runs: its kernel and, for a dispatching version (kernels/vN.yaml),
    the kernels its routes use, followed through (a routed vK may dispatch too), and the local
    headers of its CUDA/HIP sources."""
    out, todo = [], [Path(kernel)]
    while todo:
        k = todo.pop()
        if k in out:
            continue
        out.append(k)
        if k.suffix == ".yaml":
            todo += [version_kernel(k.parent, r["use"]) for r in (_read_yaml(k) or {}).get("dispatch") or []]
        elif k.suffix in COMPILED:
            todo += local_headers(k)
    return sorted(out)


def _kernel_of(kdir: Path, n: int, found: list[Path]) -> Path:
    """vN's kernel file; two of them (v3.py and v3.cu) is one too many."""
    kernels = [p for p in found if p.suffix in KERNEL_KINDS]
    if len(kernels) > 1:
        raise WorkspaceError(
            f"{kernels[1]}: v{n} has two kernel files ({', '.join(p.name for p in kernels)}): keep one"
        )
    return kernels[0] if kernels else kdir / f"v{n}.py"


def discover_versions(
    root: Path, classes: list[str], configs: list[dict] | None = None
) -> tuple[list[Version], list[str]]:
    """The versions the graph runs, in order, and the trailing drafts it skips."""
    configs = configs or []
    kdir = root / "kernels"
    if not kdir.is_dir():
        raise WorkspaceError(f"{kdir}: folder is missing (it holds kernels/v0.py, v0.yaml, ...)")
    numbers: dict[int, list[Path]] = {}
    for p in sorted(kdir.iterdir()):
        if p.suffix not in (*KERNEL_KINDS, ".yaml") or p.name.startswith(("_", ".")):
            continue
        if not VERSION_RE.match(p.stem):
            raise WorkspaceError(f"{p}: not a version name (expected v0, v1, ... without leading zeros)")
        numbers.setdefault(int(p.stem[1:]), []).append(p)
    if 0 not in numbers:
        raise WorkspaceError(f"{kdir / 'v0.py'}: file is missing (v0 is the baseline)")
    drafts = trailing_drafts(kdir, list(numbers))
    for n in drafts:
        del numbers[n]
    versions = []
    for n in range(max(numbers) + 1):
        kernel, meta_path = _kernel_of(kdir, n, numbers.get(n, [])), kdir / f"v{n}.yaml"
        if n not in numbers:
            raise WorkspaceError(f"{kernel}: file is missing (versions must be numbered without gaps)")
        if n > 0 and not meta_path.is_file():
            raise WorkspaceError(
                f"{meta_path}: file is missing (every version but v0 needs hypothesis, rationale and expected)"
            )
        meta = _read_yaml(meta_path) if meta_path.is_file() else None
        if meta is None:
            meta = {}
        if not isinstance(meta, dict):
            raise WorkspaceError(f"{meta_path}: (top level): must be a mapping")
        validate(meta, "version.schema.yaml", meta_path)
        if meta.get("dispatch"):
            if kernel.is_file():
                raise WorkspaceError(f"{meta_path}: dispatch: a dispatching version has no {kernel.name} (remove one)")
            kernel = meta_path  # the composed kernel is described by the metadata
        elif not kernel.is_file():
            raise WorkspaceError(f"{kernel}: file is missing (its metadata {meta_path.name} exists)")
        _check_written(meta, meta_path, n)
        _check_dispatch(meta, meta_path, n, configs)
        v = Version(f"v{n}", n, kernel, meta_path, meta)
        for tc in v.target_classes or []:
            if tc not in classes:
                raise WorkspaceError(f"{meta_path}: target_class: '{tc}' is not a config class {classes}")
        versions.append(v)
    return versions, [f"v{n}" for n in drafts]


def load_workspace(path: str | Path, *, versions: bool = True) -> Workspace:
    """Load a workspace; ``versions=False`` reads only ref.py's presence and target.yaml (what a
    rule job may read: its declared inputs), not every kernels/vN.yaml."""
    root = Path(path)
    if not root.is_dir():
        raise WorkspaceError(f"{root}: workspace folder does not exist")
    raw = _read_yaml(root / "target.yaml")
    if isinstance(raw, dict) and raw.get("kind") == "command":
        return _command_workspace(root, raw, versions)
    if not (root / "ref.py").is_file():
        raise WorkspaceError(f"{root / 'ref.py'}: file is missing (it defines setup() and reference())")
    t = load_target(root)
    all_classes = []
    for cfg in t["configs"] + t["cpu_configs"]:
        c = config_class(cfg, t["class_by"])
        if c not in all_classes:
            all_classes.append(c)
    found, drafts = discover_versions(root, all_classes, t["configs"] + t["cpu_configs"]) if versions else ([], [])
    return Workspace(
        root=root,
        name=t.get("name", root.name),
        configs=t["configs"],
        cpu_configs=t["cpu_configs"],
        class_by=t["class_by"],
        tolerances=t["tolerances"],
        seeds=t["seeds"],
        dtype_column=t["dtype_column"],
        versions=found,
        drafts=drafts,
        tf32=bool(t.get("tf32", False)),
    )


# a 10-bit mantissa's tolerance, as KernelBench holds float16 (src/kernelbench/eval.py): TF32's inputs
TF32_TOL = {"atol": 1e-2, "rtol": 1e-2}


def _widest(tol: dict | None, least: dict) -> dict:
    return {k: max((tol or least)[k], least[k]) for k in ("atol", "rtol")}


def _matches(when: dict, cfg: dict) -> bool:
    return all(cfg.get(col) in (vals if isinstance(vals, list) else [vals]) for col, vals in when.items())


def route_for(routes: list[dict], cfg: dict) -> str:
    """The version a dispatching version sends config ``cfg`` to (the first route that matches)."""
    for r in routes:
        when = r.get("when")
        if when is None:
            return r["use"]
        if _matches(when, cfg):
            return r["use"]
    raise WorkspaceError(f"no dispatch route for {cfg} (the last entry must be a default)")


def _command_workspace(root: Path, data: dict, versions: bool) -> Workspace:
    """A target of kind command (kopt.workspace.command): no ref.py, no configs of its own (the
    command's CSV names them), versions that name a commit or a patch."""
    from kopt.workspace.command import load_spec

    spec = load_spec(data, root / "target.yaml")
    found, drafts = discover_command_versions(root) if versions else ([], [])
    return Workspace(root, data.get("name", root.name), [], [], spec.class_by, {}, 0, "dtype", found, spec, drafts)


def discover_command_versions(root: Path) -> tuple[list[Version], list[str]]:
    """kernels/v0.yaml, v1.yaml, ... of a command target: each a commit or a patch (vN.diff) on its parent."""
    from kopt.workspace.command import version_source

    kdir = root / "kernels"
    names = sorted(int(p.stem[1:]) for p in kdir.glob("v*.yaml") if VERSION_RE.match(p.stem)) if kdir.is_dir() else []
    if not names or names[0] != 0:
        raise WorkspaceError(f"{kdir / 'v0.yaml'}: file is missing (v0 names the baseline commit)")
    drafts = trailing_drafts(kdir, names)
    versions = []
    for n in range((drafts[0] if drafts else names[-1] + 1)):
        meta_path = kdir / f"v{n}.yaml"
        if not meta_path.is_file():
            raise WorkspaceError(f"{meta_path}: file is missing (versions must be numbered without gaps)")
        meta = _read_yaml(meta_path)
        if not isinstance(meta, dict):
            raise WorkspaceError(f"{meta_path}: (top level): must be a mapping")
        validate(meta, "version.schema.yaml", meta_path)
        _check_written(meta, meta_path, n)
        version_source(meta, meta_path, n)
        versions.append(Version(f"v{n}", n, meta_path, meta_path, meta))
    return versions, [f"v{n}" for n in drafts]


def _is_draft(meta_path: Path) -> bool:
    """Metadata that still says TODO for what the version tries, as `kopt new` writes it (a field
    left out is an error, not a draft)."""
    meta = _read_yaml(meta_path) if meta_path.is_file() else None
    if not isinstance(meta, dict):
        return False
    return any(
        str(meta.get(k) or "").strip().upper().startswith("TODO") for k in ("hypothesis", "rationale", "expected")
    )


def trailing_drafts(kdir: Path, numbers: list[int]) -> list[int]:
    """The last versions whose metadata still says TODO: drafts, which the graph skips (a draft
    before a written version stays an error there)."""
    drafts: list[int] = []
    for n in sorted(numbers, reverse=True):
        if n == 0 or not _is_draft(kdir / f"v{n}.yaml"):
            break
        drafts.insert(0, n)
    return drafts


def _check_written(meta: dict, meta_path: Path, n: int) -> None:
    """Every version but v0 says what it tries (no TODO); parent and repair_of name earlier versions."""
    if n > 0:
        for key in ("hypothesis", "rationale", "expected"):
            val = str(meta.get(key) or "").strip()
            if not val or val.upper().startswith("TODO"):
                raise WorkspaceError(f"{meta_path}: {key}: required for every version but v0 (write it, not TODO)")
    for key in ("parent", "repair_of"):
        ref = meta.get(key)
        if ref is not None and int(ref[1:]) >= n:
            raise WorkspaceError(f"{meta_path}: {key}: {ref} is not an earlier version")
