"""The records that cross process and file boundaries, one model per result file (pydantic).

Why pydantic: one definition gives the typed record, its validation with a message naming the
field, and the JSON Schema (``python -m kopt.workspace.records --schema``), so the schema cannot
drift from the code. Each file's top level is closed (an unknown key fails); nested records name
the keys every reader relies on and admit more (a GPU run adds counters a CPU run lacks).

Validated: the child request when the parent writes it and the child's result envelope when the
parent reads it (kopt.measure.runner; a mismatch there is a bug of ours, not of the kernel); every file of a results tree by ``validate_tree`` (the
tests run it on a whole CPU graph; ``python -m kopt.workspace.records results/`` anywhere).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, ValidationError


class Closed(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class Open(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)


class Provenance(Open):
    created: str
    kernel_sha256: str | None = None
    ref_sha256: str | None = None
    target_sha256: str | None = None
    params_sha256: str | None = None
    routed_sha256: dict[str, str] | None = None
    settings: dict | None = None
    env: dict | None = None
    gate: dict | None = None


# --- the child process (kopt.measure.runner <-> kopt.measure.child) ----------------------------


class ConfigItem(Closed):
    config: dict[str, Any]
    key: str
    cls: str = Field(alias="class")
    tol: dict | None = None
    tolerances: dict | None = None


class ProfileHere(Closed):
    """On the CPU, the profile run by the check-then-time child in its own kernel process, after the
    bench (kopt.measure.child._profile_here): the profile request's own settings."""

    raw_dir: str
    asm_dir: str
    calls: int
    opts: dict
    inputs: dict


class ChildRequest(Closed):
    ref: str
    kernel: str
    device: str
    seeds: int
    configs_by_device: dict[Literal["cpu", "cuda"], list[ConfigItem]]
    opts: dict
    inputs: dict
    raw_dir: str | None = None  # profile
    asm_dir: str | None = None
    calls: int | None = None
    tool: str | None = None
    runs: int | None = None  # hardware
    builds: dict[str, str] = {}  # a CUDA/HIP kernel file -> the shared library its build made
    held_by: int | None = None  # the job's pid: wait for its go (kopt.measure.runner.Child) before touching a device
    wrapper: list[str] | None = None  # a profiler that wraps the kernel's process (not the judge)
    sandbox: bool = True  # Landlock around the kernel's process (kopt.inside.sandbox)
    call_timeout_s: float | None = None  # the judge's limit on one answer of the kernel's process
    clock: str | None = None  # Nsight Compute's executable: the clock that decides (kopt.measure.outside_clock)
    tf32: bool = False  # target.yaml's: torch's TF32 switches left on in the kernel's process
    profile: ProfileHere | None = None  # check_then_time on the CPU: the profile after the bench


class HardwareRequest(Closed):
    device: str
    runs: int


REQUESTS: dict[str, type[BaseModel]] = {"hardware": HardwareRequest}  # every other task: ChildRequest


def checked_request(task: str, request: dict) -> dict:
    """``request`` unchanged, once it matches its task's record (a ValidationError names the field)."""
    REQUESTS.get(task, ChildRequest).model_validate(request)
    return request


class ChildEnvelope(Closed):
    """What the child writes: its result, or the error that ended it."""

    ok: bool
    result: dict | None = None
    error: str | None = None


# --- result files --------------------------------------------------------------------------------


class BenchRow(Open):
    """One row of bench.csv: these columns, after the config's own columns (M, N, dtype, ...)."""

    config_key: str
    config_class: str
    status: Literal["ok", "failed", "skipped"]
    median_us: float | None = None
    host_us: float | None = None
    p20_us: float | None = None
    p80_us: float | None = None
    n_samples: float | None = None
    ci_pct: float | None = None  # half-width of the median's 95% interval, % of the median
    gbps: float | None = None
    tflops: float | None = None
    flops: float | None = None
    bytes: float | None = None
    profiler_us: float | None = None
    profiler_ci_pct: float | None = None  # the same for the profiler's GPU time per call
    event_null_us: float | None = None
    spin_us: float | None = None  # the spin queued before each timed call (kopt.measure.timing)
    profiled_event_us: float | None = None
    profiled_host_us: float | None = None
    profiled_wait_us: float | None = None  # the GPU waiting for the host after the spin, profiled (median)
    sm_clock_mhz: float | None = None
    throttled: bool | None = None
    device: str | None = None
    method: str | None = None
    error: str | None = None
    profiler_note: str | None = None  # why the profiler gave no time, or a torch baseline's profiled-call dispute
    clock: str | None = None  # what decides: "ncu" (gpu_us, outside the kernel's process), "in-process", "judge" (CPU)
    gpu_us: float | None = None  # Nsight Compute: every launch of the config's own process, over its calls
    gpu_se_us: float | None = None  # its standard error: the calls' spread over sqrt(calls) (None: calls unequal)
    gpu_launches: float | None = None  # kernel launches per call under Nsight Compute
    gpu_calls: float | None = None  # the calls behind gpu_se_us (the noise rule's degrees of freedom)
    wall_us: float | None = None  # the judge's own clock around each timed call's order and answer (median)
    # the bound on work Nsight Compute does not see (kopt.measure.bound): the judge's clock per call around
    # batches of back-to-back calls in the timing process, its standard error, the calls per batch
    bound_us: float | None = None
    bound_se_us: float | None = None
    bound_calls: float | None = None
    bound_host_us: float | None = None  # the kernel process's own host time per call in the batches (its report)
    clock_wall_us: float | None = (
        None  # the judge's clock per call around Nsight Compute's calls (its own work included)
    )
    clock_cpu_us: float | None = None  # CPU time per call of the process Nsight Compute wrapped, and of its own
    clock_note: str | None = None  # why a torch baseline has no outside clock


BENCH_COLUMNS = list(BenchRow.model_fields)


def gpu_column(df: pd.DataFrame) -> str | None:
    """The bench.csv column of the GPU time that decides over ``df``'s rows: ``gpu_us`` (Nsight
    Compute's, read outside the kernel's process) when every row has it, else ``profiler_us``
    (torch.profiler's, in-process) when every row has it, else None (the script's median decides)."""
    for col in ("gpu_us", "profiler_us"):
        if len(df) and col in df and (df[col].notna() & (df[col] > 0)).all():
            return col
    return None


def _column(df: pd.DataFrame, col: str) -> dict[str, float]:
    """config key -> ``col``'s value, where it has one."""
    if col not in df:
        return {}
    return {r.config_key: float(getattr(r, col)) for r in df.itertuples() if pd.notna(getattr(r, col))}


def gpu_times(df: pd.DataFrame) -> dict:
    """A bench.csv's GPU times as the decision fold takes them (``gpu_us``), the clock they are on
    (``clock``: ncu, in-process; judge on the CPU, whose medians are the judge's own round trips),
    Nsight Compute's standard errors (``gpu_se``) and launches per call (``launches``), and what
    bounds unseen work and says where it went (``bound``: bound_us, bound_se_us, bound_host_us,
    clock_cpu_us, clock_wall_us, each config key -> value)."""
    cols = ("bound_us", "bound_se_us", "bound_calls", "bound_host_us", "clock_cpu_us", "clock_wall_us")
    bound = {c: _column(df, c) for c in cols}
    if len(df) and "clock" in df and (df["clock"] == "judge").all():
        return {"gpu_us": {}, "clock": "judge", "gpu_se": {}, "gpu_n": {}, "launches": {}, "bound": bound}
    col = gpu_column(df)
    gpu = {r.config_key: float(getattr(r, col)) for r in df.itertuples()} if col else {}
    if not col and "profiler_us" in df:  # where torch.profiler gave a time: the fold uses it per class
        gpu = {
            r.config_key: float(r.profiler_us) for r in df.itertuples() if pd.notna(r.profiler_us) and r.profiler_us > 0
        }
    ncu = col == "gpu_us"  # Nsight Compute's standard errors (where the calls were equal) and launches
    return {
        "gpu_us": gpu,
        "clock": "ncu" if ncu else "in-process",
        "gpu_se": _column(df, "gpu_se_us") if ncu else {},
        "gpu_n": _column(df, "gpu_calls") if ncu else {},
        "launches": _column(df, "gpu_launches") if ncu else {},
        "bound": bound,
    }


def config_columns(df: pd.DataFrame) -> list[str]:
    """bench.csv's config columns: every column that is not one of BenchRow's."""
    return [c for c in df.columns if c not in BENCH_COLUMNS]


class SampleRow(Closed):
    config_key: str
    sample: int
    us: float
    host_us: float | None = None
    seed: int | None = None
    set: int | None = None
    wall_us: float | None = None  # the judge's clock around the call's order and answer (trusted)
    clock: str | None = None  # which clock timed this sample: cuda-events, or judge (the CPU's round trip)


class ConfigCheck(Open):
    config: dict[str, Any]
    key: str
    cls: str = Field(alias="class")
    result: str
    reason: str | None = None
    seeds: list


class Correctness(Closed):
    version: str
    status: Literal["pass", "incorrect", "failed", "unsupported"]  # unsupported: needs a GPU this machine lacks
    error: str | None
    device: str | None
    method: str | None
    seeds: Any
    configs: list[ConfigCheck]
    provenance: Provenance


class CompiledKernel(Open):
    """One kernel of a CUDA build as ptxas reports it (kopt.profilers.ptxas)."""

    name: str
    mangled: str
    n_regs: int | None
    n_spills: int | None
    shared_bytes: int | None = None


class Build(Closed):
    """results/vN/build/build.json: a CUDA (.cu) or HIP (.hip) version compiled into a shared
    library, or a command target's version checked out into its own git worktree."""

    version: str
    kernel: str
    status: Literal["ok", "failed", "no-compiler"]
    error: str | None
    compiler: str | None
    arch: str | None
    arch_from: str | None  # the config, the GPU's compute capability, or a default when none answered
    command: list[str] | None
    library: str | None
    solve: list[str]
    kernels: list[CompiledKernel]
    sass: str | None
    seconds: float | None
    provenance: Provenance
    commit: str | None = None  # a command target's version: the commit its worktree is at
    patch: str | None = None  # ... and the patch applied on it
    patch_sha256: str | None = None
    base_commit: str | None = None  # the parent's commit the patch was applied on
    fixed_sha256: dict[str, str] | None = None  # the benchmark's own files, restored from v0's commit
    worktree: str | None = None


class KeptProfile(Closed):
    """bench.json's ``cpu_profile``: on the CPU, the profile the check's kernel process took after
    its bench (kopt.measure.child._profile_here), as the profile child's outcome; rule `profile`
    writes profile.json from it."""

    status: Literal["ok", "raised", "crashed", "timeout", "gate"]
    result: dict | None = None
    error: str | None = None
    device: str | None = None
    gate: dict | None = None
    timeline: dict[str, float] = {}


class BenchMeta(Closed):
    version: str
    device: str | None
    timing: dict
    physical_limit: dict | None = None
    inputs: dict | None = None
    provenance: Provenance
    cpu_profile: KeptProfile | None = None


class ProfileClass(Open):
    """One config class's profiled run: its kernels, the hottest, counters and resources."""

    cls: str = Field(alias="class")
    config: dict[str, Any]
    key: str
    kernels: list[dict] = []
    hottest: dict | None = None
    counters: dict | None = None
    resources: dict
    gpu_us_per_call: float | None = None


class Profile(Closed):
    version: str
    status: Literal["ok", "failed", "skipped"]
    error: str | None
    backend: str | None
    classes: list[ProfileClass]
    compiled: list[dict]  # Triton specialisations and ptxas's records of CUDA kernels
    language: str  # triton or cuda (CUDA C++ / HIP): which next directions apply
    provenance: Provenance
    device: str | None = None
    gpu: str | None = None
    tool_note: str | None = None
    raw_files: list[str] = []
    asm_files: list[str] = []


class BottleneckClass(Open):
    cls: str = Field(alias="class")
    bottleneck: str
    evidence: str
    why: str
    roofline: list[dict]
    roofline_fraction_min: float | None
    target_reached: bool
    next_directions: list[dict]


class Bottleneck(Closed):
    version: str
    status: Literal["ok", "skipped"]
    gpu: str | None
    ceilings: dict
    target_fraction: float
    classes: list[BottleneckClass]
    provenance: Provenance
    target_reached_all: bool | None = None
    reason: str | None = None


class ClassVerdict(Open):
    """One config class of a comparison: both clocks, the delta that decides, the verdict."""

    cls: str = Field(alias="class")
    verdict: str
    delta_pct: float | None
    basis: str | None
    script_delta_pct: float | None = None
    gpu_delta_pct: float | None = None


class LoopState(Open):
    """The decision fold's state after a version (compare.json's ``state``)."""

    best: dict | None
    consecutive_regressions: int
    recent_regressions: list
    stop: bool
    stop_reason: str | None
    repairs: dict[str, int]
    abandoned: list
    masked: list


class Compare(Closed):
    version: str
    best_before: str | None
    per_config: list[dict]
    per_class: list[ClassVerdict]
    noise_pct: float
    decision: str
    reason: str
    detail: str | None
    evidence: Any = None
    review: Any = None
    best_after: str | None
    state: LoopState
    device: str | None
    method: str | None
    hypothesis: str | None
    target_classes: Any
    roofline: dict | None = None
    diff: dict | None
    provenance: Provenance
    experience: dict | None
    repair_of: str | None = None
    split: dict | None = None
    dispatch: dict | None = None
    override: Any = None
    override_ignored: Any = None
    clock: str | None = None  # the clock of the GPU times: ncu (outside the kernel's process) or in-process
    untrusted: str | None = None  # why a keep rests on what the judge did not measure (kopt.loop.decide)


class NextAction(Open):
    """What to do next (kopt.loop.state.next_action): the action and what it needs."""

    action: Literal["evaluate", "finish-draft", "split", "repair", "new", "stop"]


class State(Closed):
    """results/state.json and `kopt status --json` (kopt.loop.state.record)."""

    after: str
    best: str | None
    consecutive_regressions: int
    repairs: dict[str, int]
    abandoned: list
    broken: list  # versions that were incorrect or failed: what a repair may name
    masked: list
    stop: bool
    stop_reason: str | None
    recent_regressions: list
    versions: list[str]
    drafts: list[str]
    classes: dict[str, dict]  # per class of the best: time, roofline fraction, gap, bottleneck, directions
    last: dict | None
    next: NextAction
    created: str


class Reference(Closed):
    device: str
    configs: list[dict]
    timeline: dict[str, float] = {}  # seconds since the job's child started, per step (its log has them too)
    provenance: Provenance


class Owner(Closed):
    workspace: str
    name: str
    ref_sha256: str
    target_sha256: str
    created: str


class Hardware(Closed):
    gpu: str
    slug: str
    device: str
    registry: dict | None
    registry_note: str | None
    measured: dict | None
    measure_error: str | None
    ceilings: dict
    note: str | None
    provenance: Provenance


class EnvCheck(Closed):
    created: str
    host: str
    python: str
    device: str
    gpu: str | None
    cuda: str | None
    rocm: str | None
    torch: str
    triton: str | None
    snakemake: str | None
    libraries: dict[str, str | None]
    profilers: dict[str, str | None]
    bytecode: dict | None = None  # whether Python keeps compiled modules (kopt.measure.environment.bytecode)
    nvidia_smi: dict | None
    rocm_smi: str | None
    note: str | None
    provenance: dict


class Recorded(Closed):
    """results/vN/recorded/manifest.json: what a version was made from, kept by content."""

    created: str
    workspace: str
    files: dict[str, str]  # path in the workspace -> sha256 (the copy is files/<path>)
    packages: dict[str, str]  # every installed package -> exact version
    packages_sha256: str


# results-relative glob -> the model of every file it matches (settings/*.json are free-form
# config excerpts, validated by config/schemas when the config is read)
FILES: dict[str, type[BaseModel]] = {
    "v*/correctness.json": Correctness,
    "v*/build/build.json": Build,
    "baselines/*/correctness.json": Correctness,
    "v*/bench.json": BenchMeta,
    "baselines/*/bench.json": BenchMeta,
    "v*/profile/profile.json": Profile,
    "v*/bottleneck.json": Bottleneck,
    "v*/compare.json": Compare,
    "v*/recorded/manifest.json": Recorded,
    "state.json": State,
    "reference.json": Reference,
    "workspace.json": Owner,
    "hardware/*.json": Hardware,
    "env_check.json": EnvCheck,
}
CSV_FILES: dict[str, type[BaseModel]] = {
    "v*/bench.csv": BenchRow,
    "baselines/*/bench.csv": BenchRow,
    "v*/bench_samples.csv": SampleRow,
    "baselines/*/bench_samples.csv": SampleRow,
}


def _rows(path: Path) -> list[dict]:
    df = pd.read_csv(path)
    return [{k: (None if pd.isna(v) else v) for k, v in r.items()} for r in df.to_dict("records")]


def validate_tree(results: str | Path) -> list[str]:
    """Every known result file under ``results`` against its model: one line per problem."""
    root, problems = Path(results), []
    for pattern, model in [*FILES.items(), *CSV_FILES.items()]:
        for path in sorted(root.glob(pattern)):
            docs = [json.loads(path.read_text())] if pattern in FILES else _rows(path)
            for i, doc in enumerate(docs):
                try:
                    model.model_validate(doc)
                except ValidationError as e:
                    where = f"{path}" + ("" if pattern in FILES else f" row {i + 1}")
                    first = e.errors()[0]
                    problems.append(f"{where}: {'.'.join(map(str, first['loc']))}: {first['msg']}")
    return problems


def main(argv: list[str]) -> int:
    if argv[:1] == ["--schema"]:
        print(json.dumps({p: m.model_json_schema() for p, m in {**FILES, **CSV_FILES}.items()}, indent=1))
        return 0
    problems = validate_tree(argv[0] if argv else "results")
    print("\n".join(problems) or "every result file matches its record")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
