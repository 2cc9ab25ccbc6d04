"""The plots of the reports (PNG, matplotlib), from result files alone: one function per figure."""

from __future__ import annotations

import math
from pathlib import Path

from kopt.report.results import KEPT, Results
from kopt.report.tables import benchmark_rows

MARKERS = "osD^v<>p*hX"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> str:
    plt = _pyplot()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name


def cpu_label(res: Results) -> str:
    """The caption's warning when the timings are the CPU interpreter's ("" on a GPU)."""
    return "" if res.last.compare.get("device") not in (None, "cpu") else " (cpu-interpreter: not GPU performance)"


def _roofline_points(res: Results) -> list[tuple]:
    """(version, class, roofline point) for every point with an arithmetic intensity and FLOP/s."""
    return [
        (v, c["class"], p)
        for v in res.versions
        for c in v.bottleneck.get("classes", [])
        for p in c.get("roofline", [])
        if p.get("arithmetic_intensity") and p.get("achieved_tflops")
    ]


def roofline_figure(res: Results, label: str = ""):
    """roofline.png: the measured ceilings and every class of every version (hollow: discarded)."""
    plt = _pyplot()
    bw = (res.hardware.get("ceilings") or {}).get("memory_gbps")
    fig, ax = plt.subplots(figsize=(7, 5))
    pts = _roofline_points(res)
    if pts and bw:
        ais = [p["arithmetic_intensity"] for _, _, p in pts]
        peak = max((p.get("peak_tflops") or 0) for _, _, p in pts) or None
        lo, hi = min(ais) / 4, max(ais) * 4
        if peak:
            hi = max(hi, peak * 1e3 / bw * 4)
        xs = [lo * (hi / lo) ** (j / 100) for j in range(101)]
        ys = [min(peak or math.inf, x * bw / 1e3) for x in xs]
        ax.plot(xs, ys, "k-", lw=1.5, label=f"ceiling ({bw:.0f} GB/s" + (f", {peak:.1f} TFLOP/s)" if peak else ")"))
        for ci, cls in enumerate(res.classes):
            for vi, v in enumerate(res.versions):
                sel = [p for vv, c, p in pts if vv is v and c == cls]
                if not sel:
                    continue
                kept = v.decision in KEPT
                ax.scatter(
                    [p["arithmetic_intensity"] for p in sel],
                    [p["achieved_tflops"] for p in sel],
                    marker=MARKERS[ci % len(MARKERS)],
                    facecolors=f"C{vi % 10}" if kept else "none",
                    edgecolors=f"C{vi % 10}",
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
    return fig


def class_png(cls: str) -> str:
    return "class_" + "".join(ch if ch.isalnum() else "_" for ch in cls) + ".png"


def class_figure(res: Results, cls: str, label: str = ""):
    """class_<cls>.png: the class's time (each version on the clock its comparison was decided on,
    compare.json) and its roofline fraction against the roofline target, across versions."""
    plt = _pyplot()
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(9, 3.5))
    names, clocks = [v.name for v in res.versions], set()
    for v_i, v in enumerate(res.versions):
        y, clock = v.class_us(cls)
        if y is None:
            continue
        clocks.add(clock)
        kept = v.decision in KEPT
        a1.scatter([v_i], [y], marker="o" if kept else "x", color="C0" if kept else "C3")
        f = v.bottleneck_of(cls).get("roofline_fraction_min")
        if f is not None:
            a2.scatter([v_i], [f], marker="o" if kept else "x", color="C0" if kept else "C3")
    a1.set_xticks(range(len(names)), names)
    a1.set_ylabel(f"µs ({clocks.pop() if len(clocks) == 1 else 'deciding'} clock, geomean)")
    a1.set_title(f"{cls}: time (o kept, x discarded)", fontsize=9)
    a2.set_xticks(range(len(names)), names)
    target = res.target_fraction
    if target is not None:
        a2.axhline(target, color="k", ls="--", lw=1)
    a2.set_ylabel("fraction of the roofline")
    a2.set_title(f"{cls}: roofline fraction (target {'not recorded' if target is None else f'{target:g}'})", fontsize=9)
    if label:
        fig.suptitle(label.strip(" ()"), fontsize=9, color="C3")
    return fig


def speedup_figure(res: Results, label: str = ""):
    """speedup.png: per config, the best version's speedup against v0, torch eager and
    torch.compile (kopt.report.tables.benchmark_rows, each on the clock its comparison used)."""
    plt = _pyplot()
    rows = benchmark_rows(res)
    fig, ax = plt.subplots(figsize=(max(6, len(rows) * 1.2), 4))
    best = res.best
    if rows:
        w = 0.27
        bars = [("vs v0", "vs_v0"), ("vs torch eager", "vs_eager"), ("vs torch.compile", "vs_compile")]
        for j, (lab, col) in enumerate(bars):
            ax.bar([i + (j - 1) * w for i in range(len(rows))], [r[col] or math.nan for r in rows], w, label=lab)
        ax.axhline(1.0, color="k", lw=1)
        ax.set_xticks(range(len(rows)), [r["key"].replace(",dtype=", "\n") for r in rows], fontsize=6)
        ax.set_ylabel("speedup (×)")
        ax.legend(fontsize=8)
    ax.set_title(f"Speedup of the best version ({best.name if best else '-'}) per config{label}", fontsize=9)
    return fig


def plots(res: Results, out_dir: str | Path) -> list[str]:
    """Every figure of the reports, written to ``out_dir``; their file names."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    label = cpu_label(res)
    files = [_save(roofline_figure(res, label), out / "roofline.png")]
    files += [_save(class_figure(res, cls, label), out / class_png(cls)) for cls in res.classes]
    files.append(_save(speedup_figure(res, label), out / "speedup.png"))
    return files
