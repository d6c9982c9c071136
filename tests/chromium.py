"""A report page as a person sees it: Debian's headless Chromium, driven by Playwright.

:func:`look` opens a page offline (every request but the page's own file is refused and
recorded), waits for every plot to be drawn, and reads what is on the screen at one
width: the visible text, whether the page scrolls sideways, each plot's SVG marks, each
table's fit in its box, and any number written in scientific notation in the text or
the charts' labels. A screenshot is kept under ``$SEQERA_ARTIFACTS`` (default
``tests-artifacts/``, not committed) for CI to publish. Under CI a missing Chromium
(``apt-get install chromium``) or Playwright is a failure, never a skip.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import IN_CI, require

CHROMIUM = os.environ.get("SEQERA_CHROMIUM", "/usr/bin/chromium")
# Chromium's own calls home (updates, sync, field trials) are off, as on a CI runner.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
REPO = Path(__file__).resolve().parents[1]
# A busy CI machine (2 cores, several suites) can take a while over 4.8 MB of plotly.js.
PATIENCE_MS = 120_000
# What a person sees: drawn plots (plotly.js gave the div its class and an SVG with points
# or bars), the page's sideways overflow, the tables against their boxes, every label.
SEEN = """() => ({
    text: document.body.innerText,
    labels: [...document.querySelectorAll('svg text')].map(t => t.textContent).join('\\n'),
    overflow: document.documentElement.scrollWidth - window.innerWidth,
    // what Plotly's pseudo-HTML made live in the charts: links and styled text
    links: document.querySelectorAll('div.plot svg a').length,
    styled: [...document.querySelectorAll('div.plot svg tspan[style]')]
        .map(t => t.getAttribute('style')),
    plots: [...document.querySelectorAll('div.plot')].map(d => ({
        id: d.id,
        title: (d.querySelector('.gtitle') || {}).textContent || '',
        drawn: d.classList.contains('js-plotly-plot') && d.querySelector('svg.main-svg') !== null,
        marks: d.querySelectorAll('path.point, g.point > path, path.box').length,
        width: d.getBoundingClientRect().width,
    })),
    tables: [...document.querySelectorAll('table')].map(t => ({
        id: t.id,
        columns: t.rows[0].cells.length,
        overflow: t.getBoundingClientRect().right - t.parentElement.getBoundingClientRect().right,
    })),
})"""


def chromium() -> str:
    """Chromium's path; skip (fail under CI) without it."""
    found = shutil.which(CHROMIUM)
    if found is None:
        message = f"{CHROMIUM} not found: the page is tested in Chromium (apt-get install chromium)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return found


def artifacts() -> Path:
    """Where screenshots go for CI to publish."""
    folder = Path(os.environ.get("SEQERA_ARTIFACTS") or REPO / "tests-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def look(page_path: Path, widths: tuple[int, ...], name: str) -> dict[int, dict[str, Any]]:
    """What the page shows at each width (see :data:`SEEN`), plus ``refused`` requests and
    console ``errors``; a full-page screenshot of each is kept as ``{name}-{width}.png``."""
    sync_api = require("playwright.sync_api", "the report's page is tested in a real browser")
    executable = chromium()
    url = page_path.as_uri()
    seen: dict[int, dict[str, Any]] = {}
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=FLAGS)
        try:
            for width in widths:
                errors: list[str] = []
                refused: list[str] = []
                context = browser.new_context(viewport={"width": width, "height": 900})

                def route(handle: Any, refused: list[str] = refused) -> None:
                    if handle.request.url == url:
                        handle.continue_()
                    else:
                        refused.append(handle.request.url)
                        handle.abort()

                context.route("**/*", route)
                page = context.new_page()
                page.on("console", lambda m, e=errors: m.type == "error" and e.append(m.text))
                page.on("pageerror", lambda exc, e=errors: e.append(str(exc)))
                page.goto(url, wait_until="load", timeout=PATIENCE_MS)
                try:
                    page.wait_for_function(
                        "() => [...document.querySelectorAll('div.plot')]"
                        ".every(d => d.querySelector('svg.main-svg') !== null)",
                        timeout=PATIENCE_MS,
                    )
                except sync_api.TimeoutError:
                    pytest.fail(f"the plots were not drawn at {width} px; console errors: {errors}")
                seen[width] = {**page.evaluate(SEEN), "errors": errors, "refused": refused}
                page.screenshot(path=str(artifacts() / f"{name}-{width}.png"), full_page=True)
                context.close()
        finally:
            browser.close()
    return seen
