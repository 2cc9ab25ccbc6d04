"""The docs (issue 33): the README is a front page, the manual a site that builds with no broken
link or missing page, whose pages open in headless Chromium with no console error or broken image
(screenshots kept: tests.helpers.artifacts), and its generated pages are what their sources make now."""

import re
import subprocess
import sys
from pathlib import Path

from tests.helpers import artifacts

ROOT = Path(__file__).resolve().parents[1]


def test_the_readme_is_a_front_page_whose_links_all_land():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    links = re.findall(r"\]\(([^)#]+)", text)
    assert links and all((ROOT / link).exists() for link in links), [x for x in links if not (ROOT / x).exists()]
    assert text.count("\n    bash tools/") == 2  # the two commands: run the example, run the tests


def test_the_generated_pages_are_what_their_sources_make():
    p = subprocess.run([sys.executable, "tools/docs.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


def test_the_rule_graph_picture_is_drawn_from_the_committed_graph():
    dot, svg = (ROOT / "docs" / "img" / f"rulegraph.{ext}" for ext in ("dot", "svg"))
    rules = re.findall(r'label = "(\w+)"', dot.read_text())
    assert {"measure", "compare", "profile", "bottleneck"} <= set(rules)
    drawn = svg.read_text()
    assert all(f">{r}<" in drawn for r in rules), rules


def test_the_site_builds_strictly(tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True,
    )  # fmt: skip
    assert p.returncode == 0, p.stderr[-3000:]
    home = (tmp_path / "site" / "index.html").read_text()
    assert "rulegraph.svg" in home and (tmp_path / "site" / "img" / "rulegraph.svg").is_file()
    assert (tmp_path / "site" / "reference" / "configuration" / "index.html").is_file()
    sys.path.insert(0, str(ROOT / "tools"))
    from page_check import check_pages

    pages = [tmp_path / "site" / "index.html", tmp_path / "site" / "trust" / "index.html"]
    found = check_pages(pages, artifacts("docs"))  # in headless Chromium: console errors, broken images
    assert not any(found.values()), found
