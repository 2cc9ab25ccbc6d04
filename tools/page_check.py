"""Open HTML pages in headless Chromium (Debian's package, through Playwright) as a reader would,
and say what is broken: a console error, a page error, a request that failed, an image that did
not load. A screenshot of each page is kept. Used by the tests on the docs site's home page and
the HTML report of a CPU run (issue 33); by hand:

    python tools/page_check.py SCREENSHOT_DIR PAGE.html [PAGE.html ...]   # exit 1 naming each problem
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

# Debian's chromium; Playwright's own browser download is not used (nothing is fetched at run time)
CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


def browser_path() -> str:
    """The system's Chromium, or a clear error (tools/test.sh installs Debian's)."""
    for name in CHROMIUM:
        found = shutil.which(name)
        if found:
            return found
    raise FileNotFoundError("no Chromium on PATH (apt-get install chromium): the pages cannot be checked")


def check_pages(pages: list[Path], screenshots: Path) -> dict[str, list[str]]:
    """Each page's problems (empty when none), its screenshot written to ``screenshots``."""
    from playwright.sync_api import sync_playwright

    screenshots.mkdir(parents=True, exist_ok=True)
    out: dict[str, list[str]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=browser_path(), args=["--no-sandbox"])
        try:
            for page_path in pages:
                out[str(page_path)] = _check(
                    browser, page_path, screenshots / f"{page_path.parent.name}-{page_path.stem}.png"
                )
        finally:
            browser.close()
    return out


def _check(browser, page_path: Path, shot: Path) -> list[str]:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} ({r.failure})"))
    page.goto(page_path.resolve().as_uri(), wait_until="load")
    page.wait_for_timeout(500)  # scripts that draw after load
    broken = page.evaluate(
        "() => Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)"
    )
    problems += [f"image did not load: {src}" for src in broken]
    page.screenshot(path=str(shot), full_page=False)
    page.close()
    return problems


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    found = check_pages([Path(p) for p in argv[1:]], Path(argv[0]))
    bad = 0
    for page, problems in found.items():
        for p in problems:
            print(f"{page}: {p}", file=sys.stderr)
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
