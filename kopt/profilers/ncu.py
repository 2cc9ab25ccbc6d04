"""Nsight Compute: the command line we run, and a parser of its ``--csv --page details`` output.

Pure (text in, dicts out); tested on CSV recorded on the H100 (tests/fixtures/profiles/).
The details page has one row per metric per profiled launch, with the columns
``ID, ..., Kernel Name, ..., Block Size, Grid Size, ..., Section Name, Metric Name, Metric Unit,
Metric Value`` and, on rule rows, ``Rule Name, Rule Type, Rule Description`` (recent versions add
``Estimated Speedup``). Metrics we ask for with ``--metrics`` appear under the section
"Command line profiler metrics". Lines that are not CSV (``==PROF==`` messages, the program's own
output) are skipped.
"""

from __future__ import annotations

import csv
import io
import re

SECTIONS = [
    "SpeedOfLight",
    "MemoryWorkloadAnalysis",
    "ComputeWorkloadAnalysis",
    "Occupancy",
    "LaunchStats",
    "WarpStateStats",
]
# Extra counters: DRAM bytes and the per-reason warp stalls (the WarpStateStats charts' data).
METRICS = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio",
]
# Any process may call cu(da)ProfilerStop and launch unseen (H100: 20 of 30 launches recorded,
# benchmarks/probes/clock_profiler_stop.py): every command here makes Nsight Compute ignore it.
IGNORE_STOP = ["--disable-profiler-start-stop"]
NVTX_RANGE = "kopt-profile"
CLASS_RANGE = "kopt-class "  # + the config class: the range inside NVTX_RANGE that names the class
# ncu --nvtx: the column holding each launch's push/pop range stack, as
# ``<tid>  "<domain>:<name>:<PL_Type>:<PL_Value>:<CLR_Type>:<Color>:<Msg_Type>:<Msg>"  ...``
NVTX_COLUMN = "thread Domain:Push/Pop_Range"


def class_range(cls: str) -> str:
    return CLASS_RANGE + cls


def nvtx_class(stack: str | None, prefix: str = CLASS_RANGE) -> str | None:
    """The config class named by the innermost ``prefix`` range of a launch's NVTX stack."""
    found = None
    for entry in re.findall(r'"([^"]*)"', stack or ""):
        name = entry.split(">:", 1)[-1].rsplit(":", 6)[0]
        if name.startswith(prefix):
            found = name[len(prefix) :]
    return found


def command(
    ncu: str, log_file: str, kernel_regex: str | None = None, in_range: bool = True, launches: int | None = None
) -> list[str]:
    """The ncu prefix: every kernel launched inside a ``kopt-profile`` NVTX range (one call per
    config class, after warm-up, each in its ``kopt-class`` range; ``in_range`` False: every
    launch, for an external command, or its first ``launches``), optionally only those whose name
    matches ``kernel_regex``."""
    cmd = [ncu, "--csv", "--page", "details", "--print-units", "base", "--clock-control", "none", *IGNORE_STOP]
    for s in SECTIONS:
        cmd += ["--section", s]
    cmd += ["--metrics", ",".join(METRICS)]
    cmd += ["--nvtx", *(["--nvtx-include", f"{NVTX_RANGE}/"] if in_range else [])]
    cmd += ["--target-processes", "all", "--log-file", log_file]
    if launches:
        cmd += ["--launch-count", str(launches)]
    if kernel_regex:
        cmd += ["--kernel-name", f"regex:{kernel_regex}"]
    return cmd


def clock_command(ncu: str, log_file: str, only_range: str | None = None) -> list[str]:
    """The ncu prefix of a deciding clock: the GPU time (``gpu__time_duration``, one pass, no replay)
    of every launch of the wrapped process and of any process it starts (``only_range``: of those
    inside that NVTX range only, for trusted code); no cache control (whoever orders the calls
    flushes the L2) and no clock control (the GPU runs at the clocks it runs at unprofiled)."""
    return [
        *[ncu, "--csv", "--page", "details", "--print-units", "base", "--clock-control", "none", *IGNORE_STOP],
        *["--cache-control", "none", "--metrics", "gpu__time_duration.sum"],
        *(["--nvtx", "--nvtx-include", f"{only_range}/"] if only_range else []),
        *["--target-processes", "all", "--log-file", log_file],
    ]


def timing_command(ncu: str, log_file: str, kernel_regex: str) -> list[str]:
    """The ncu prefix for an external benchmark command (a ``command`` target): ``clock_command``'s,
    for the launches whose name matches ``kernel_regex`` only, with their NVTX ranges (launches
    inside ``kopt-class <class>`` ranges are told apart)."""
    return [*clock_command(ncu, log_file), "--nvtx", "--kernel-name", f"regex:{kernel_regex}"]


def number(text: str | None) -> float | None:
    if text is None:
        return None
    t = text.strip().replace(",", "")
    if not t or t.lower() in ("n/a", "nan"):
        return None
    try:
        return float(t)
    except ValueError:
        return None


_TIME = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "second": 1e6, "s": 1e6}
_BYTES = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "Tbyte": 1e12, "KB": 1e3, "MB": 1e6, "GB": 1e9}


def parse_details(text: str) -> list[dict]:
    """Launches in file order: id, kernel, block, grid, metrics {(section, name): (value, unit)}, rules."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if not lines:
        raise ValueError("no CSV rows in the Nsight Compute output (was anything profiled?)")
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    if not rows or "Metric Name" not in rows[0]:
        raise ValueError("the Nsight Compute CSV has no 'Metric Name' column (not a --page details CSV)")
    launches: dict[str, dict] = {}
    for r in rows:
        lid = r.get("ID", "0")
        ln = launches.setdefault(
            lid,
            {
                "id": lid,
                "kernel": r.get("Kernel Name", "?"),
                "block": r.get("Block Size"),
                "grid": r.get("Grid Size"),
                "device": r.get("Device"),
                "cc": r.get("CC"),
                "class": nvtx_class(next((v for k, v in r.items() if k and k.startswith(NVTX_COLUMN)), None)),
                "metrics": {},
                "rules": [],
            },
        )
        if r.get("Rule Name"):
            rule = {
                "section": r.get("Section Name"),
                "rule": r["Rule Name"],
                "type": r.get("Rule Type"),
                "message": r.get("Rule Description"),
            }
            if r.get("Estimated Speedup"):
                rule["estimated_speedup_pct"] = number(r["Estimated Speedup"])
            if rule not in ln["rules"]:
                ln["rules"].append(rule)
        name = r.get("Metric Name")
        if name:
            ln["metrics"][(r.get("Section Name", ""), name)] = (r.get("Metric Value"), r.get("Metric Unit", ""))
    return list(launches.values())


def _get(ln: dict, names: tuple[str, ...], section: str | None = None):
    for (sec, name), (val, unit) in ln["metrics"].items():
        if name in names and (section is None or section.lower() in sec.lower()):
            return val, unit
    return None, None


def _num(ln, *names, section=None) -> float | None:
    return number(_get(ln, names, section)[0])


def _time_us(ln, *names, section=None) -> float | None:
    val, unit = _get(ln, names, section)
    v = number(val)
    return None if v is None else v * _TIME.get(unit or "usecond", 1.0)


def _bytes(ln, *names, section=None) -> float | None:
    val, unit = _get(ln, names, section)
    v = number(val)
    return None if v is None else v * _BYTES.get(unit or "byte", 1.0)


_STALL = re.compile(r"smsp__average_warps_issue_stalled_(.+)_per_issue_active\.ratio")


def normalise(ln: dict) -> dict:
    """One launch in profile.json terms (None where ncu did not report a figure)."""
    limits = {}
    for label, key in [
        ("Block Limit SM", "blocks"),
        ("Block Limit Registers", "registers"),
        ("Block Limit Shared Mem", "shared memory"),
        ("Block Limit Warps", "warps"),
        ("Block Limit Barriers", "barriers"),
    ]:
        v = _num(ln, label)
        if v is not None:
            limits[key] = v
    limiter = min(limits, key=lambda k: limits[k]) if limits else None
    stalls = []
    for (_, name), (val, _u) in ln["metrics"].items():
        m = _STALL.fullmatch(name)
        v = number(val)
        if m and v is not None and not m.group(1).endswith("_not_issued"):
            stalls.append({"reason": m.group(1), "warps_per_issue": v})
    stalls.sort(key=lambda s: -s["warps_per_issue"])
    dram_r = _bytes(ln, "dram__bytes_read.sum")
    dram_w = _bytes(ln, "dram__bytes_write.sum")
    static = _bytes(ln, "Static Shared Memory Per Block", "launch__shared_mem_per_block_static") or 0.0
    dynamic = _bytes(ln, "Dynamic Shared Memory Per Block", "launch__shared_mem_per_block_dynamic") or 0.0
    threads_per_block = _num(ln, "Block Size", "launch__block_size")
    return {
        "kernel": ln["kernel"],
        "class": ln.get("class"),
        "block": ln["block"],
        "grid": ln["grid"],
        "duration_us": _time_us(ln, "Duration", "gpu__time_duration.sum"),
        "sm_throughput_pct": _num(ln, "Compute (SM) Throughput", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        "memory_throughput_pct": _num(
            ln,
            "Memory Throughput",
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
            section="Speed Of Light",
        ),
        "dram_throughput_pct": _num(ln, "DRAM Throughput", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"),
        "dram_bytes": (dram_r or 0.0) + (dram_w or 0.0) if (dram_r is not None or dram_w is not None) else None,
        "registers_per_thread": _num(ln, "Registers Per Thread", "launch__registers_per_thread"),
        "shared_memory_per_block_bytes": static + dynamic,
        "threads_per_block": threads_per_block,
        "warps_per_block": threads_per_block / 32 if threads_per_block else None,
        "grid_blocks": _num(ln, "Grid Size", "launch__grid_size"),
        "sm_count": _num(ln, "# SMs", "SMs", "launch__sm_count"),
        "waves_per_sm": _num(ln, "Waves Per SM", "launch__waves_per_multiprocessor"),
        "theoretical_occupancy_pct": _num(ln, "Theoretical Occupancy", "sm__maximum_warps_per_active_cycle_pct"),
        "achieved_occupancy_pct": _num(ln, "Achieved Occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active"),
        "occupancy_block_limits": limits,
        "occupancy_limiter": limiter,
        "warp_stalls_top": stalls[:3],
        "rules": ln["rules"],
    }


def parse(text: str) -> list[dict]:
    return [normalise(ln) for ln in parse_details(text)]


def clock_launches(text: str) -> list[dict]:
    """A deciding clock's launches (``clock_command``), in the order Nsight Compute numbered them:
    id, process, kernel, and the GPU time in µs (``gpu__time_duration``, else the details
    page's Duration; None when ncu reported neither). Every line but ncu's own messages
    (``==PROF==``, ``==WARNING==``, ...) is read as CSV; an ``==ERROR==`` (a launch it could not
    profile leaves no row), ids that do not run 0, 1, 2, ... in order, or a launch timed twice is
    not a record to decide on."""
    lines = text.splitlines()
    errors = [ln for ln in lines if ln.startswith("==ERROR==")]
    if errors:
        raise ValueError(f"Nsight Compute reported an error: {errors[0][:200]}")
    body = "\n".join(ln for ln in lines if not _MESSAGE.match(ln))
    rows = list(csv.DictReader(io.StringIO(body)))
    if not rows or "Metric Name" not in rows[0] or "ID" not in rows[0]:
        raise ValueError("no Nsight Compute CSV with 'ID' and 'Metric Name' columns")
    launches: dict[int, dict] = {}
    for r in rows:
        try:
            lid = int(str(r.get("ID")))
        except ValueError:
            raise ValueError(f"a launch id that is not a number: {str(r.get('ID'))[:40]!r}") from None
        ln = launches.setdefault(
            lid, {"id": lid, "process": r.get("Process ID"), "kernel": r.get("Kernel Name") or "?"}
        )
        if r.get("Metric Name") in ("gpu__time_duration.sum", "Duration"):
            if ln.get("us") is not None:
                raise ValueError(f"launch {lid} has two GPU times")
            v = number(r.get("Metric Value"))
            ln["us"] = None if v is None else v * _TIME.get(r.get("Metric Unit") or "nsecond", 1e-3)
    if list(launches) != list(range(len(launches))):
        raise ValueError("the launch ids do not run 0, 1, 2, ... in order")
    return [{**ln, "us": ln.get("us")} for ln in launches.values()]


_MESSAGE = re.compile(r"==[A-Z]+==")


def _dims(text: str | None) -> list[int] | None:
    nums = re.findall(r"\d+", text or "")
    return [int(n) for n in nums] or None


def per_kernel(launches: list[dict]) -> list[dict]:
    """Normalised launches of one profiled call, by kernel name, longest first, in the terms of
    kopt.profilers.torchtrace.per_kernel (so a class reads the same whichever profiler ran)."""
    by: dict[str, list[dict]] = {}
    for ln in launches:
        by.setdefault(ln["kernel"], []).append(ln)
    total = sum(ln.get("duration_us") or 0.0 for ln in launches) or 1.0
    rows = []
    for name, group in by.items():
        us = sum(ln.get("duration_us") or 0.0 for ln in group)
        first = group[0]
        rows.append(
            {
                "name": name,
                "kind": "kernel",
                "calls": float(len(group)),
                "mean_us": us / len(group),
                "us_per_call": us,
                "share": us / total,
                "registers_per_thread": first.get("registers_per_thread"),
                "shared_memory_bytes": first.get("shared_memory_per_block_bytes"),
                "grid": _dims(first.get("grid")),
                "block": _dims(first.get("block")),
            }
        )
    return sorted(rows, key=lambda r: -r["us_per_call"])
