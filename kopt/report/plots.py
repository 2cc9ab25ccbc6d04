"""The plots of the reports (PNG, matplotlib), from result files alone."""

from __future__ import annotations

import math
from pathlib import Path

from kopt.loop.decide import geomean
from kopt.report.results import KEPT, Results
from kopt.report.tables import benchmark_rows


def plots(res: Results, out_dir: str | Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    label = "" if res.last.compare.get("device") not in (None, "cpu") else " (cpu-interpreter: not GPU performance)"
    files = []

    # 1. roofline: every class of every version
    ceil = res.hardware.get("ceilings") or {}
    bw = ceil.get("memory_gbps")
    fig, ax = plt.subplots(figsize=(7, 5))
    pts = []
    for i, v in enumerate(res.versions):
        for c in v.bottleneck.get("classes", []):
            for p in c.get("roofline", []):
                if p.get("arithmetic_intensity") and p.get("achieved_tflops"):
                    pts.append((v, c["class"], p))
    if pts and bw:
        ais = [p["arithmetic_intensity"] for _, _, p in pts]
        peak = max((p.get("peak_tflops") or 0) for _, _, p in pts) or None
        lo, hi = min(ais) / 4, max(ais) * 4
        if peak:
            hi = max(hi, peak * 1e3 / bw * 4)
        xs = [lo * (hi / lo) ** (j / 100) for j in range(101)]
        ys = [min(peak or math.inf, x * bw / 1e3) for x in xs]
        ax.plot(xs, ys, "k-", lw=1.5, label=f"ceiling ({bw:.0f} GB/s" + (f", {peak:.1f} TFLOP/s)" if peak else ")"))
        markers = "osD^v<>p*hX"
        for ci, cls in enumerate(res.classes):
            for v in res.versions:
                sel = [p for vv, c, p in pts if vv is v and c == cls]
                if not sel:
                    continue
                kept = v.decision in KEPT
                ax.scatter(
                    [p["arithmetic_intensity"] for p in sel],
                    [p["achieved_tflops"] for p in sel],
                    marker=markers[ci % len(markers)],
                    facecolors=f"C{res.versions.index(v) % 10}" if kept else "none",
                    edgecolors=f"C{res.versions.index(v) % 10}",
                    label=f"{v.name} {cls}" + ("" if kept else " (discarded)"),
                )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("arithmetic intensity (FLOP/byte)")
        ax.set_ylabel("achieved TFLOP/s")
        ax.legend(fontsize=6, ncol=2)
    else:
        ax.text(0.5, 0.5, "no FLOPs/bytes or ceilings to plot", ha="center")
    ax.set_title(f"Roofline, {res.hardware.get('gpu', '?')}{label}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "roofline.png", dpi=110)
    plt.close(fig)
    files.append("roofline.png")

    # 2. per class: time and roofline fraction across versions
    for cls in res.classes:
        fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
        names = [v.name for v in res.versions]
        for v_i, v in enumerate(res.versions):
            keys = [k for k, c in v.class_of().items() if c == cls]
            t = v.times()
            if not t:
                continue
            y = geomean(t[k] for k in keys)
            kept = v.decision in KEPT
            a1.scatter([v_i], [y], marker="o" if kept else "x", color="C0" if kept else "C3")
            f = v.bottleneck_of(cls).get("roofline_fraction_min")
            if f is not None:
                a2.scatter([v_i], [f], marker="o" if kept else "x", color="C0" if kept else "C3")
        a1.set_xticks(range(len(names)), names)
        a1.set_ylabel(f"µs ({res.last.clock()} clock, geomean)")
        a1.set_title(f"{cls}: time (o kept, x discarded)", fontsize=9)
        a2.set_xticks(range(len(names)), names)
        a2.axhline(0.9, color="k", ls="--", lw=1)
        a2.set_ylabel("fraction of the roofline")
        a2.set_title(f"{cls}: roofline fraction (target 0.9)", fontsize=9)
        if label:
            fig.suptitle(label.strip(" ()"), fontsize=9, color="C3")
        fig.tight_layout()
        name = "class_" + "".join(ch if ch.isalnum() else "_" for ch in cls) + ".png"
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        files.append(name)

    # 3. per config speedup bars of the best version
    rows = benchmark_rows(res)
    fig, ax = plt.subplots(figsize=(max(6, len(rows) * 1.2), 4))
    best, v0 = res.best, res.versions[0]
    if rows and best:
        clock = best.clock()
        v0t = v0.times(clock) if v0.ok else {}
        w = 0.27
        for j, (lab, vals) in enumerate(
            [
                ("vs v0", [v0t.get(r["key"], math.nan) / r["best_us"] for r in rows]),
                ("vs torch eager", [r["vs_eager"] or math.nan for r in rows]),
                ("vs torch.compile", [r["vs_compile"] or math.nan for r in rows]),
            ]
        ):
            ax.bar([i + (j - 1) * w for i in range(len(rows))], vals, w, label=lab)
        ax.axhline(1.0, color="k", lw=1)
        ax.set_xticks(range(len(rows)), [r["key"].replace(",dtype=", "\n") for r in rows], fontsize=6)
        ax.set_ylabel("speedup (×)")
        ax.legend(fontsize=8)
    ax.set_title(f"Speedup of the best version ({best.name if best else '-'}) per config{label}", fontsize=9)
    fig.tight_layout()
    fig.savefig(out / "speedup.png", dpi=110)
    plt.close(fig)
    files.append("speedup.png")
    return files
