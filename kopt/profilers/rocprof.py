"""rocprofv3 on AMD: the command line, and a parser of its ``*_kernel_trace.csv``.

Pure. The columns used are the documented ones of ``rocprofv3 --kernel-trace --output-format csv``:
``Kernel_Name``, ``Start_Timestamp`` and ``End_Timestamp`` (ns), ``VGPR_Count``,
``Accum_VGPR_Count``, ``SGPR_Count``, ``LDS_Block_Size``, ``Scratch_Size``, ``Workgroup_Size_X/Y/Z``
and ``Grid_Size_X/Y/Z``. No AMD GPU was available here, so the parser's test fixture is written
from that documentation, not recorded (tests/fixtures/profiles/README.md says so).
"""

from __future__ import annotations

import csv
import io


def command(rocprofv3: str, out_dir: str, pmc: list[str] | None = None) -> list[str]:
    cmd = [rocprofv3, "--kernel-trace", "--stats", "--output-format", "csv", "-d", out_dir, "-o", "kopt"]
    if pmc:
        cmd += ["--pmc", *pmc]
    return [*cmd, "--"]


def _int(row: dict, key: str) -> int | None:
    v = (row.get(key) or "").strip()
    try:
        return int(float(v))
    except ValueError:
        return None


def parse_kernel_trace(text: str) -> list[dict]:
    """Per kernel name, hottest first: launches, mean and total µs, share, and its resources."""
    rows = list(csv.DictReader(io.StringIO(text)))
    if rows and "Kernel_Name" not in rows[0]:
        raise ValueError("not a rocprofv3 kernel trace: no Kernel_Name column")
    by: dict[str, dict] = {}
    for r in rows:
        start, end = _int(r, "Start_Timestamp"), _int(r, "End_Timestamp")
        if start is None or end is None:
            continue
        k = by.setdefault(r["Kernel_Name"], {"name": r["Kernel_Name"], "launches": 0, "total_ns": 0, "row": r})
        k["launches"] += 1
        k["total_ns"] += end - start
    total = sum(k["total_ns"] for k in by.values()) or 1
    out = []
    for k in sorted(by.values(), key=lambda k: -k["total_ns"]):
        r = k["row"]
        wg = [_int(r, f"Workgroup_Size_{a}") or 1 for a in "XYZ"]
        grid = [_int(r, f"Grid_Size_{a}") or 1 for a in "XYZ"]
        out.append(
            {
                "name": k["name"],
                "launches": k["launches"],
                "mean_us": k["total_ns"] / k["launches"] / 1e3,
                "total_us": k["total_ns"] / 1e3,
                "share": k["total_ns"] / total,
                "vgpr": _int(r, "VGPR_Count"),
                "agpr": _int(r, "Accum_VGPR_Count"),
                "sgpr": _int(r, "SGPR_Count"),
                "lds_bytes": _int(r, "LDS_Block_Size"),
                "scratch_bytes": _int(r, "Scratch_Size"),
                "workgroup": wg,
                "grid": grid,
            }
        )
    return out
