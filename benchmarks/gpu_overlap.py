"""Which GPU ran which job, when, from the gate records in a results tree's provenance; whether two
jobs ever used one GPU at once; how much of the time two GPUs were busy together.

    python3 benchmarks/gpu_overlap.py results          # exit 1 when two jobs overlapped on one GPU

Every GPU job's result file carries ``provenance.gate`` (kopt.loop.gate): the GPU it claimed,
``claimed_at`` and ``child_ended_at`` (unix seconds). A job is its claim: files of one job (rule
measure's correctness.json, bench.json and profile.json) share its claim, and the job lasts until
the last of its children ended.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class GpuJob:
    label: str  # the result file, relative to the tree
    gpu_index: int
    gpu_uuid: str
    start: float
    end: float


def jobs(tree: Path, unchecked: list[str] | None = None) -> list[GpuJob]:
    """The GPU jobs of ``tree``; result files whose gate claimed a GPU without both times (an older
    run, or a command target's runs) go to ``unchecked``."""
    seen: dict[tuple[str, float], GpuJob] = {}
    for path in sorted(tree.rglob("*.json")):
        try:
            gate = (json.loads(path.read_text()).get("provenance") or {}).get("gate") or {}
        except (ValueError, AttributeError):
            continue
        if "claimed_at" not in gate or "child_ended_at" not in gate:
            if "gpu_uuid" in gate and unchecked is not None:
                unchecked.append(str(path.relative_to(tree)))
            continue
        key = (gate["gpu_uuid"], gate["claimed_at"])
        end = max(gate["child_ended_at"], seen[key].end) if key in seen else gate["child_ended_at"]
        label = str(path.relative_to(tree)) if key not in seen else f"{seen[key].label} + {path.name}"
        seen[key] = GpuJob(label, gate["gpu_index"], gate["gpu_uuid"], gate["claimed_at"], end)
    return sorted(seen.values(), key=lambda j: j.start)


def same_gpu_overlaps(js: list[GpuJob]) -> list[tuple[GpuJob, GpuJob]]:
    """Every pair of jobs whose time on one GPU intersects (none, when the claim works)."""
    return [(a, b) for i, a in enumerate(js) for b in js[i + 1 :] if a.gpu_uuid == b.gpu_uuid and b.start < a.end]


def busy_together_s(js: list[GpuJob]) -> float:
    """Seconds during which jobs on two or more GPUs ran at once."""
    edges = sorted([(j.start, 1) for j in js] + [(j.end, -1) for j in js])
    total, running, last = 0.0, 0, None
    for t, step in edges:
        if running >= 2 and last is not None:
            total += t - last
        running, last = running + step, t
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("tree", type=Path)
    unchecked: list[str] = []
    js = jobs(ap.parse_args().tree, unchecked)
    for u in unchecked:
        print(f"not checked: {u} claimed a GPU but its record has no claim and end times")
    if not js:
        print("no GPU job with claim times in this tree")
        return 1
    t0 = js[0].start
    print("| job | GPU | from (s) | to (s) | seconds |\n|---|---|---|---|---|")
    for j in js:
        print(f"| {j.label} | {j.gpu_index} | {j.start - t0:.1f} | {j.end - t0:.1f} | {j.end - j.start:.1f} |")
    span = max(j.end for j in js) - t0
    held = sum(j.end - j.start for j in js)
    bad = same_gpu_overlaps(js)
    print(
        f"\nGPU jobs: {len(js)} on GPUs {sorted({j.gpu_index for j in js})}; first claim to last end {span:.1f} s; "
        f"GPU-job seconds {held:.1f}; two GPUs busy at once for {busy_together_s(js):.1f} s"
    )
    for a, b in bad:
        print(f"OVERLAP on GPU {a.gpu_index}: {a.label} until {a.end - t0:.1f} s, {b.label} from {b.start - t0:.1f} s")
    print("no two jobs overlapped on one GPU" if not bad else f"{len(bad)} overlap(s) on one GPU")
    return 1 if bad or unchecked else 0


if __name__ == "__main__":
    sys.exit(main())
