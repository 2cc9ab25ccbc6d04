"""What to try next, drawn from the evidence of one config class (pure).

Each rule reads the class's evidence (the profiler's counters, the kernel's resources, its roofline
point and the bytes the problem needs) and, when its trigger holds, gives a direction that names
the numbers that triggered it. Rules are tried in order (the cheapest, surest win first); the
static table per bottleneck class (data/strategies.yaml) fills in only when no rule fired, and says
so. Strategy ids are the table's, so the experience log ranks both alike.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from kopt.analysis.bottleneck import next_directions as table_directions

DRAM_EXCESS = 1.25  # DRAM bytes over the compulsory bytes beyond which data crosses DRAM twice
LOW_OCCUPANCY = 50.0


@dataclass(frozen=True)
class Evidence:
    """One class's numbers (None: not measured, e.g. no Nsight Compute)."""

    bottleneck: str
    language: str = "triton"
    fraction: float | None = None  # the class's lowest roofline fraction
    side: str | None = None  # memory | compute
    target: float = 0.9
    sm_pct: float | None = None
    mem_pct: float | None = None
    dram_bytes: float | None = None
    compulsory_bytes: float | None = None  # ref.py's bytes_moved() of the profiled config
    theoretical_occupancy_pct: float | None = None
    occupancy_limiter: str | None = None
    warps_per_block: float | None = None
    registers: float | None = None
    spills: float | None = None
    shared_bytes: float | None = None
    stages: int | None = None
    waves: float | None = None
    top_stall: str | None = None
    top_stall_warps: float | None = None

    @classmethod
    def of_class(cls, bottleneck: str, language: str, counters: dict, resources: dict, point: dict, target: float):
        k, r = counters or {}, resources or {}
        stalls = k.get("warp_stalls_top") or []
        return cls(
            bottleneck=bottleneck,
            language=language,
            fraction=point.get("fraction"),
            side=point.get("side"),
            target=target,
            sm_pct=k.get("sm_throughput_pct"),
            mem_pct=k.get("memory_throughput_pct"),
            dram_bytes=k.get("dram_bytes"),
            compulsory_bytes=point.get("bytes"),
            theoretical_occupancy_pct=k.get("theoretical_occupancy_pct"),
            occupancy_limiter=k.get("occupancy_limiter"),
            warps_per_block=k.get("warps_per_block") or r.get("warps"),
            registers=r.get("registers_per_thread"),
            spills=r.get("spills"),
            shared_bytes=r.get("shared_memory_bytes"),
            stages=r.get("stages"),
            waves=k.get("waves_per_sm"),
            top_stall=stalls[0]["reason"] if stalls else None,
            top_stall_warps=stalls[0].get("warps_per_issue") if stalls else None,
        )


def _d(id_: str, idea: str, metric: str, evidence: str) -> dict:
    return {"id": id_, "idea": idea, "metric": metric, "evidence": evidence}


def _at_ceiling(e: Evidence) -> dict | None:
    if e.fraction is None or e.fraction < e.target:
        return None
    return _d(
        "less-work",
        "Only less work helps now (fewer bytes or FLOPs: a cheaper algorithm, narrower storage if the tolerance "
        "allows); otherwise this class is done",
        "roofline fraction",
        f"{e.fraction:.0%} of the {e.side} ceiling, at or above the {e.target:.0%} target",
    )


def _spills(e: Evidence) -> dict | None:
    if not e.spills:
        return None
    return _d(
        "fewer-registers",
        "Cut live values per thread (smaller tiles, fewer accumulators, recompute instead of keep) so nothing spills",
        "spilled bytes",
        f"{e.spills:g} bytes spilled to local memory at {e.registers or 0:g} registers per thread",
    )


def _dram_excess(e: Evidence) -> dict | None:
    if not e.dram_bytes or not e.compulsory_bytes or e.dram_bytes < DRAM_EXCESS * e.compulsory_bytes:
        return None
    ratio = e.dram_bytes / e.compulsory_bytes
    return _d(
        "fuse-passes",
        "Read each element once: keep the row or tile on chip between passes (online softmax, fused epilogue), "
        "and order the launch so neighbouring programs share L2 (grouped order)",
        "DRAM bytes against the compulsory bytes",
        f"DRAM moved {e.dram_bytes / 1e9:.2f} GB, {ratio:.2f}x the {e.compulsory_bytes / 1e9:.2f} GB the problem needs",
    )


def _occupancy(e: Evidence) -> dict | None:
    occ, lim = e.theoretical_occupancy_pct, e.occupancy_limiter
    if occ is None or occ >= LOW_OCCUPANCY * 1.5 or lim not in ("registers", "shared memory", "blocks"):
        return None
    if lim == "registers" and occ < LOW_OCCUPANCY:
        cuda = e.language != "triton"
        return _d(
            "launch-bounds" if cuda else "fewer-registers",
            "__launch_bounds__ / maxrregcount to cap registers" if cuda else "Smaller BLOCK sizes or fewer live values",
            "theoretical occupancy",
            f"{e.registers or 0:g} registers per thread cap theoretical occupancy at {occ:g}%",
        )
    if lim == "shared memory" and occ < LOW_OCCUPANCY:
        return _d(
            "less-shared",
            "Fewer pipeline stages or smaller tiles to cut shared memory per block",
            "theoretical occupancy",
            f"{(e.shared_bytes or 0) / 1024:.0f} KiB of shared memory per block (stages {e.stages}) cap occupancy at {occ:g}%",
        )
    if lim == "blocks" and (e.warps_per_block or 0) <= 2:
        return _d(
            "num-warps",
            "More warps per program (num_warps 4+, or several rows per program) so the per-SM block limit "
            "stops capping the resident warps",
            "achieved occupancy",
            f"{e.warps_per_block or 0:g} warp(s) per block: the blocks-per-SM limit caps theoretical occupancy at {occ:g}%",
        )
    return None


def _grid(e: Evidence) -> dict | None:
    if e.waves is None:
        return None
    if e.waves < 1:
        return _d(
            "split-work",
            "Split each row or tile across several programs (split-K, two-stage reduction) to fill every SM",
            "waves per SM",
            f"the grid fills {e.waves:.2f} of one wave",
        )
    tail = e.waves - int(e.waves)
    if e.waves < 4 and 0 < tail < 0.5:
        return _d(
            "persistent",
            "A persistent kernel sized to the SM count, or tiles sized so the waves come out whole",
            "waves per SM",
            f"{e.waves:.2f} waves: the last one runs {tail:.0%} full",
        )
    return None


def _memory_latency(e: Evidence) -> dict | None:
    if e.top_stall != "long_scoreboard" or e.mem_pct is None or e.mem_pct >= 80:
        return None
    cuda = e.language != "triton"
    return _d(
        "async-copy" if cuda else "pipelining",
        "More bytes in flight: wider loads, cp.async/TMA prefetch"
        if cuda
        else "More bytes in flight: num_stages > 1 on tile loops, wider contiguous loads, more warps per SM",
        "long-scoreboard stalls",
        f"warps wait on memory first (long scoreboard, {e.top_stall_warps or 0:.1f} warps per issue) while memory "
        f"runs at {e.mem_pct:.0f}% of peak",
    )


STALLS = {
    "barrier": ("ilp", "Fewer block-wide barriers: warp-level reductions, one barrier per tile"),
    "short_scoreboard": ("less-shared", "Fewer shared-memory round trips and bank conflicts (swizzled layouts)"),
    "mio_throttle": ("less-shared", "Fewer shared-memory instructions: wider accesses, swizzled layouts"),
    "math_pipe_throttle": ("cheaper-math", "A saturated math pipe: cheaper instructions, or the tensor cores"),
}


def _stall(e: Evidence) -> dict | None:
    if e.top_stall not in STALLS:
        return None
    id_, idea = STALLS[e.top_stall]
    return _d(
        id_,
        idea,
        f"{e.top_stall} stalls",
        f"the top warp stall is {e.top_stall} ({e.top_stall_warps or 0:.1f} warps per issue)",
    )


def _compute_gap(e: Evidence) -> dict | None:
    if e.side != "compute" or e.fraction is None or e.fraction >= e.target:
        return None
    return _d(
        "tile-shape",
        "Tune the tile shape, num_warps and num_stages for this class (or split it off with its own kernel)",
        "SM throughput %",
        f"{e.fraction:.0%} of the compute ceiling, {e.target - e.fraction:.0%} short of the target"
        + (f", with {e.warps_per_block:g} warps and {e.stages} stages" if e.warps_per_block and e.stages else ""),
    )


RULES: list[Callable[[Evidence], dict | None]] = [
    _at_ceiling,
    _spills,
    _dram_excess,
    _occupancy,
    _grid,
    _memory_latency,
    _stall,
    _compute_gap,
]


def directions(e: Evidence, n: int = 4) -> list[dict]:
    """The directions whose evidence holds, in rule order; the bottleneck class's table when none does."""
    found = [d for d in (rule(e) for rule in RULES) if d]
    if found:
        return found[:n]
    why = f"no rule's evidence holds; the {e.bottleneck} table"
    return [{**d, "evidence": why} for d in table_directions(e.bottleneck, e.language, n)]
