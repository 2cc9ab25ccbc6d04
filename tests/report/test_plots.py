"""The report's figures (kopt.report.plots): every one written, and linked from the final report."""

from kopt.report import plots, tables


def test_plots_write_every_figure(res, tmp_path):
    out = tmp_path / "plots"
    files = plots.plots(res, out)
    assert files == ["roofline.png", "class_N_256.png", "class_N_2048.png", "speedup.png"]
    for f in files:
        assert (out / f).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    final = tables.render_final(res, files)
    assert all(f"![{f}](plots/{f})" in final for f in files)
