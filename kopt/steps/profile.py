"""Rule `profile` (rules/measure.smk) and rule `bottleneck`: one profiled run of a version, after
its decision, then its roofline and bottleneck per config class with next directions. A
misbehaving kernel becomes data (status failed), never an exception."""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from kopt.analysis import bottleneck as bn
from kopt.analysis import registry as hw
from kopt.analysis.directions import Evidence, directions
from kopt.analysis.roofline import point
from kopt.measure.runner import ChildOutcome, run_gated
from kopt.profilers import ncu, rocprof
from kopt.profilers.cuobjdump import cubins_to_sass
from kopt.profilers.gpus import detect_gpu
from kopt.steps.common import child_request, read_builds, write_json
from kopt.workspace.provenance import hashes, now
from kopt.workspace.records import KeptProfile, config_columns
from kopt.workspace.target import COMPILED, kernel_files, load_workspace


def choose_backend(requested: str, device: str) -> str:
    """The profiler to run: the configured one, else ncu, rocprofv3 or torch.profiler, whichever is
    there; the interpreter's wall time on the CPU."""
    if device == "cpu":
        return "cpu-interpreter"
    if requested != "auto":
        return requested
    if shutil.which("ncu"):
        return "ncu"
    if shutil.which("rocprofv3"):
        return "rocprofv3"
    return "torch"


@dataclass
class ProfileRun:
    """One version's profile in the making: its child's request, the profiler (and the command
    prefix that wraps the child), where the raw output and assembly go, and profile.json so far."""

    doc: dict
    request: dict
    backend: str
    wrapper: list[str] | None
    out: Path
    asm: Path
    settings: dict
    builds: list[str]
    note: str | None = None  # why the profiler is not the one configured

    @property
    def raw(self) -> Path:
        return self.out / "raw"


def plan_profile(
    *, version: str, target: str, kernel: str, out_dir: str, asm_dir: str, settings: dict, builds: list[str]
) -> ProfileRun:
    """The profile of ``kernel``: one child for every class, under Nsight Compute when it is the
    backend (NVTX-ranged calls), else torch.profiler's. ``builds``: the build folders of its CUDA/HIP
    kernels, whose ptxas resources and SASS join the profile."""
    ws = load_workspace(Path(target).parent, versions=False)
    run = ProfileRun({}, {}, "", None, Path(out_dir), Path(asm_dir), settings, builds)
    run.raw.mkdir(parents=True, exist_ok=True)
    run.asm.mkdir(parents=True, exist_ok=True)
    run.doc = {"version": version, "status": "ok", "error": None, "backend": None, "classes": [], "compiled": []}
    run.doc["language"] = language(kernel_files(kernel))
    run.doc["provenance"] = {**hashes(kernel, ws.ref, ws.target, settings), "created": now()}
    run.request = {
        **child_request(ws, kernel, settings, builds=builds),
        "raw_dir": str(run.raw),
        "asm_dir": str(run.asm),
        "calls": settings["calls"],
    }
    run.backend = choose_backend(settings["profiler"], _device(settings))
    tool = settings.get("ncu", "ncu")
    if run.backend == "ncu" and not shutil.which(tool):
        run.backend, run.note = "torch", f"Nsight Compute ({tool}) not found; torch.profiler figures instead"
    if run.backend == "ncu":
        run.wrapper = ncu.command(tool, str(run.raw / "ncu_details.csv"))
        run.request["tool"] = "ncu"
    return run


def profile_version(
    *,
    version: str,
    target: str,
    kernel: str,
    correctness_json: str,
    bench_json: str,
    out_dir: str,
    asm_dir: str,
    log: str,
    settings: dict,
    builds: list[str],
) -> dict:
    """Rule `profile`: profile.json of a version that passed its gate. On a GPU one child, behind
    the GPU gate, under Nsight Compute where it is the backend; on the CPU the record the check's
    kernel process took after its bench (bench.json's ``cpu_profile``: no process here)."""
    run = plan_profile(
        version=version,
        target=target,
        kernel=kernel,
        out_dir=out_dir,
        asm_dir=asm_dir,
        settings=settings,
        builds=builds,
    )
    corr = json.loads(Path(correctness_json).read_text())
    if corr["status"] != "pass":
        return profile_skipped(run, f"correctness {corr['status']}: {corr['error']}")
    if run.backend == "cpu-interpreter":
        outcome = _cpu_profile(json.loads(Path(bench_json).read_text()))
        Path(log).write_text(f"{version}: profiled in the check's kernel process (its measure.log)\n")
    else:
        outcome = run_gated(
            "profile", run.request, settings, timeout_s=settings["timeout_s"], log_path=log, wrapper=run.wrapper
        )
    return finish_profile(run, outcome, log)


def profiles_in_the_check(settings: dict) -> bool:
    """Whether the check's kernel process profiles after its bench (rule `measure`): on the CPU,
    where no profiler wraps a process and the profile is the interpreter's wall time."""
    return choose_backend(settings["profiler"], _device(settings)) == "cpu-interpreter"


def keep_cpu_profile(bench_json: Path, outcome: ChildOutcome) -> None:
    """bench.json's ``cpu_profile``: the check's own profile, for rule `profile` to write."""
    meta = json.loads(bench_json.read_text())
    kept = KeptProfile(**{k: getattr(outcome, k) for k in KeptProfile.model_fields})
    meta["cpu_profile"] = kept.model_dump()
    write_json(bench_json, meta)


def _cpu_profile(bench: dict) -> ChildOutcome:
    kept = bench.get("cpu_profile") or {"status": "raised", "error": "the check's kernel process left no profile"}
    return ChildOutcome(**KeptProfile.model_validate(kept).model_dump())


def _device(settings: dict) -> str:
    return "cuda" if detect_gpu(settings.get("device", "auto")) else "cpu"


def profile_skipped(run: ProfileRun, why: str) -> dict:
    """profile.json of a version that was not profiled, and why (its correctness, no GPU)."""
    run.doc.update(status="skipped", error=f"not profiled: {why}")
    write_json(run.out / "profile.json", run.doc)
    return run.doc


def finish_profile(run: ProfileRun, outcome: ChildOutcome, log: str) -> dict:
    """profile.json from the profile child's ``outcome`` (see ``_profiled``): every class's kernels,
    counters and resources, or the failure."""
    if run.wrapper:
        (run.raw / "ncu_command.txt").write_text(" ".join(run.wrapper) + " python -m kopt.measure.child profile ...\n")
    outcome, run.backend, note = _profiled(run, outcome, log)
    doc = run.doc
    doc["tool_note"] = note or run.note
    if not outcome.ok:
        doc.update(status="failed", error=outcome.error)
        write_json(run.out / "profile.json", doc)
        return doc
    res = outcome.result
    compiled = _disassembled(res["triton"], run.asm) + compiled_kernels(run.builds, run.asm)
    backend = "cpu-interpreter" if res["device"] == "cpu" else run.backend
    doc.update(device=res["device"], gpu=res["env"].get("gpu"), backend=backend, compiled=compiled)
    for c in res["classes"]:
        c.setdefault("hottest", c["kernels"][0] if c.get("kernels") else None)
        c.setdefault("counters", None)
        c["resources"] = kernel_resources(c, compiled)
    doc["classes"] = res["classes"]
    doc["raw_files"] = sorted(p.name for p in run.raw.iterdir())
    doc["asm_files"] = sorted(p.name for p in run.asm.iterdir())
    doc["provenance"].update(env=res["env"], gate=outcome.gate, child_timeline=outcome.timeline)
    write_json(run.out / "profile.json", doc)
    return doc


def language(sources: list[Path]) -> str:
    """What the version's kernels are written in, for the next directions: cuda when any of them
    is CUDA C++ or HIP, else triton."""
    return "cuda" if any(p.suffix in COMPILED for p in sources) else "triton"


def _disassembled(specs: list[dict], asm: Path) -> list[dict]:
    """The Triton specialisations' cubins, copied from the kernel's process, replaced by their SASS
    (kopt.profilers.cuobjdump), and their records' file lists with them."""
    listed = cubins_to_sass(asm)
    for spec in specs:
        files = [listed.get(f, f) for f in spec.get("asm_files") or []]
        spec["asm_files"] = [f for f in files if not f.endswith(".cubin")]
    return specs


def compiled_kernels(builds: list[str], asm: Path) -> list[dict]:
    """ptxas's record of every kernel of the version's CUDA builds; their SASS copied into ``asm``."""
    out = []
    for b, doc in zip(builds, read_builds(builds), strict=True):
        out += doc["kernels"]
        if doc.get("sass"):
            shutil.copy(Path(b) / doc["sass"], asm / doc["sass"])
    return out


def _profiled(run: ProfileRun, outcome: ChildOutcome, log: str) -> tuple[ChildOutcome, str, str | None]:
    """(outcome, backend, note). ncu: the child ran under Nsight Compute, its launches assigned to the
    classes by their NVTX ranges; only when ncu itself did not run the child to its end, or left no
    launch for a class, does a torch.profiler child give the figures instead (the note says why); a
    kernel that failed, hung or met no idle GPU is not run again. rocprofv3: after the
    torch.profiler child, one under rocprofv3 for the resources."""
    settings = run.settings

    def torch_run():
        req = {k: v for k, v in run.request.items() if k != "tool"}
        return run_gated("profile", req, settings, timeout_s=settings["timeout_s"], log_path=log)

    if run.backend == "ncu":
        if outcome.status != "crashed":  # the child ran to its end, or the kernel failed in it
            cpu = outcome.ok and outcome.result["device"] == "cpu"
            problem = (
                None if not outcome.ok or cpu else _from_ncu(outcome.result["classes"], run.raw / "ncu_details.csv")
            )
            if problem is None:
                return outcome, run.backend, None
        else:
            problem = f"Nsight Compute run failed ({outcome.error})"
        return torch_run(), "torch", f"{problem}; torch.profiler figures instead"
    if run.backend == "rocprofv3" and outcome.ok and outcome.result["device"] == "cuda":
        return outcome, run.backend, _rocprof_resources(run.request, outcome.result["classes"], run.raw, log, settings)
    return outcome, run.backend, None


def _from_ncu(classes: list[dict], csv_path: Path) -> str | None:
    """Each class's launches, told apart by their ``kopt-class`` NVTX range: per-kernel GPU time of
    the one profiled call, and the counters of its longest launch."""
    try:
        launches = ncu.parse(csv_path.read_text())
    except (OSError, ValueError) as e:
        return f"Nsight Compute output unreadable ({e})"
    missing = []
    for c in classes:
        mine = [ln for ln in launches if ln.get("class") == c["class"]]
        if not mine:
            missing.append(c["class"])
            continue
        c["kernels"] = ncu.per_kernel(mine)
        c["gpu_us_per_call"] = sum(ln.get("duration_us") or 0.0 for ln in mine) or None
        c["counters"] = max(mine, key=lambda ln: ln.get("duration_us") or 0.0)
        c["ncu_launches"] = len(mine)
        c["backend"] = "ncu"
    return f"Nsight Compute saw no launch in the range of class(es) {', '.join(missing)}" if missing else None


def _rocprof_resources(req: dict, classes: list[dict], raw: Path, log: str, settings: dict) -> str:
    """A second child under rocprofv3 (its kernel trace: registers, LDS, scratch per kernel), matched
    to each class's hottest kernel by name. Untested without an AMD GPU."""
    out = raw / "rocprofv3"
    wrapper = rocprof.command(settings.get("rocprofv3", "rocprofv3"), str(out), settings.get("pmc") or None)
    (raw / "rocprofv3_command.txt").write_text(" ".join(wrapper) + " python -m kopt.measure.child profile ...\n")
    outcome = run_gated(
        "profile",
        {**req, "tool": "rocprofv3"},
        settings,
        timeout_s=settings["timeout_s"],
        log_path=log,
        wrapper=wrapper,
    )
    traces = sorted(out.rglob("*kernel_trace.csv"))
    if not outcome.ok or not traces:
        return (
            f"rocprofv3 gave no kernel trace ({outcome.error or 'no *kernel_trace.csv'}); torch.profiler figures only"
        )
    kernels = rocprof.parse_kernel_trace(traces[0].read_text())
    for c in classes:
        h = (c["kernels"][0] if c.get("kernels") else {}).get("name")
        c["amd_resources"] = next((k for k in kernels if k["name"] == h), None)
    return "rocprofv3 traces cover every call (warm-ups included); resources per kernel name, not per class"


def kernel_resources(c: dict, compiled: list[dict]) -> dict:
    """Registers, spills, shared memory, warps and stages of the class's hottest kernel: the
    profiler's figures first, then the compiled kernel's (a Triton specialisation or ptxas's record)."""
    h = c.get("hottest") or {}
    k = c.get("counters") or {}
    t = _compiled_spec(compiled, h, k)
    shared = k.get("shared_memory_per_block_bytes")
    if shared is None:
        shared = h.get("shared_memory_bytes") if h.get("shared_memory_bytes") is not None else t.get("shared_bytes")
    return {
        "registers_per_thread": k.get("registers_per_thread") or h.get("registers_per_thread") or t.get("n_regs"),
        "spills": t.get("n_spills"),
        "shared_memory_bytes": shared,
        "warps": t.get("num_warps") or k.get("warps_per_block"),
        "stages": t.get("num_stages"),
    }


def _compiled_spec(specs: list[dict], hottest: dict, counters: dict) -> dict:
    """The compiled kernel that ran: same name, and the launch's warps and registers."""
    name = _base_name(hottest.get("name") or "")
    same = [m for m in specs if _base_name(m["name"]) == name] or (specs if len(specs) == 1 else [])
    block = hottest.get("block") or []
    threads = 1
    for b in block:
        threads *= int(b)
    regs = counters.get("registers_per_thread") or hottest.get("registers_per_thread")

    def score(m):
        return (m.get("num_warps") is not None and m["num_warps"] * 32 == threads) + (m.get("n_regs") == regs)

    return max(same, key=score) if same else {}


def _base_name(kernel: str) -> str:
    """A kernel's name without return type, parameters and spaces (c++filt, Nsight Compute and
    torch.profiler print a C++ template kernel differently): ``tk<64>``."""
    return re.sub(r"^void\s+", "", kernel.split("(")[0]).replace(" ", "")


def bottleneck(
    *, version: str, profile_json: str, bench_csv: str, hardware_json: str, out_json: str, settings: dict
) -> dict:
    """Roofline per config and the bottleneck per config class, with next directions."""
    prof = json.loads(Path(profile_json).read_text())
    hwd = json.loads(Path(hardware_json).read_text())
    df = pd.read_csv(bench_csv)
    target = settings["target_fraction"]
    doc: dict = {
        "version": version,
        "status": "ok",
        "gpu": hwd["gpu"],
        "ceilings": hwd["ceilings"],
        "target_fraction": target,
        "classes": [],
        "provenance": {"created": now(), "settings": settings},
    }
    if prof["status"] != "ok" or (df["status"] != "ok").any():
        doc.update(status="skipped", reason=prof.get("error") or "benchmark did not pass")
        write_json(out_json, doc)
        return doc
    prof_by_class = {c["class"]: c for c in prof["classes"]}
    for cls, rows in df.groupby("config_class", sort=False):
        points = _roofline_points(rows, config_columns(df), hwd["ceilings"], target)
        pc = prof_by_class.get(cls, {})
        doc["classes"].append(_class_bottleneck(cls, points, pc, target, prof.get("language", "triton")))
    doc["target_reached_all"] = bool(doc["classes"]) and all(c["target_reached"] for c in doc["classes"])
    write_json(out_json, doc)
    return doc


def _roofline_points(rows: pd.DataFrame, cfg_cols: list[str], ceil: dict, target: float) -> list[dict]:
    """Each config's roofline point, on the GPU time where bench has it (Nsight Compute's first)."""
    points = []
    for r in rows.itertuples():
        cfg = {c: getattr(r, c) for c in cfg_cols}
        gpu_us = next((v for v in (getattr(r, "gpu_us", None), r.profiler_us) if pd.notna(v)), None)
        p = point(
            flops=r.flops if pd.notna(r.flops) else None,
            nbytes=r.bytes if pd.notna(r.bytes) else None,
            time_us=float(gpu_us or r.median_us),
            peak_tflops=hw.peak_for(ceil, cfg),
            peak_gbps=ceil["memory_gbps"],
            target_fraction=target,
        )
        p.update(config_key=r.config_key, time_basis="profiler" if gpu_us else "script")
        points.append(p)
    return points


def _class_bottleneck(cls: str, points: list[dict], pc: dict, target: float, language: str) -> dict:
    """One class's verdict: from the profiler's counters when it has them, else its roofline."""
    fracs = [p["fraction"] for p in points if p["fraction"] is not None]
    worst = min(fracs) if fracs else None
    profiled = next((p for p in points if p["config_key"] == pc.get("key")), points[-1])
    k = pc.get("counters")
    if k and k.get("sm_throughput_pct") is not None and k.get("memory_throughput_pct") is not None:
        verdict = bn.classify_counters(
            sm_pct=k["sm_throughput_pct"],
            mem_pct=k["memory_throughput_pct"],
            theoretical_occupancy_pct=k.get("theoretical_occupancy_pct"),
            occupancy_limiter=k.get("occupancy_limiter"),
            waves_per_sm=k.get("waves_per_sm"),
        )
    else:
        verdict = bn.classify_roofline(fraction=profiled["fraction"], side=profiled["side"])
    # the class is done only when its worst config is: the fraction the rules read is the class's lowest
    point = {**profiled, "fraction": worst}
    evidence = Evidence.of_class(verdict["class"], language, k, pc.get("resources"), point, target)
    return {
        "class": cls,
        "bottleneck": verdict["class"],
        "evidence": verdict["evidence"],
        "why": verdict["why"],
        "numbers": verdict["numbers"],
        "hottest_kernel": (pc.get("hottest") or {}).get("name"),
        "profiled_config": pc.get("key"),
        "roofline": points,
        "roofline_fraction_min": worst,
        "target_reached": worst is not None and worst >= target,
        "next_directions": directions(evidence),
        "rules": (k or {}).get("rules", []),
        "warp_stalls_top": (k or {}).get("warp_stalls_top", []),
    }
