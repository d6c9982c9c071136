"""The report's page in a real browser: Debian's headless Chromium, driven by Playwright.

No network: every request but the page's own file is refused and recorded, and must
not happen. Every plot must be drawn with its points or bars, and the console must stay
free of errors. A screenshot is kept under ``$SEQERA_ARTIFACTS`` (default
``tests-artifacts/``, not committed) for CI to publish. Under CI a missing Chromium
(``apt-get install chromium``) or Playwright is a failure, never a skip.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from seqera_core.history import open_history
from seqera_core.report import write_report
from tests.conftest import IN_CI, require

RUN_ID = "local-run"  # the run conftest.local_history records
CHROMIUM = os.environ.get("SEQERA_CHROMIUM", "/usr/bin/chromium")
# Chromium's own calls home (updates, sync, field trials) are off, as on a CI runner.
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
REPO = Path(__file__).resolve().parents[3]
# Drawn: plotly.js gave the div its class and an SVG, and the SVG has points or bars.
DRAWN = """() => [...document.querySelectorAll('div.plot')].map(d => ({
    id: d.id,
    drawn: d.classList.contains('js-plotly-plot') && d.querySelector('svg.main-svg') !== null,
    marks: d.querySelectorAll('path.point, g.point > path, path.box').length,
}))"""


def _chromium() -> str:
    found = shutil.which(CHROMIUM)
    if found is None:
        message = f"{CHROMIUM} not found: the page is tested in Chromium (apt-get install chromium)"
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    return found


def _artifacts() -> Path:
    folder = Path(os.environ.get("SEQERA_ARTIFACTS") or REPO / "tests-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def test_every_plot_is_drawn_offline_without_a_console_error(
    local_history: Path, tmp_path: Path
) -> None:
    sync_api = require("playwright.sync_api", "the report's page is tested in a real browser")
    executable = _chromium()
    history = open_history(local_history)
    page_path = write_report(history, [RUN_ID], tmp_path / "report.html")
    history.close()
    url = page_path.as_uri()
    errors: list[str] = []
    refused: list[str] = []
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=FLAGS)
        try:
            context = browser.new_context(viewport={"width": 1300, "height": 900})

            def route(handle: object) -> None:
                request = handle.request  # type: ignore[attr-defined]
                if request.url == url:
                    handle.continue_()  # type: ignore[attr-defined]
                else:
                    refused.append(request.url)
                    handle.abort()  # type: ignore[attr-defined]

            context.route("**/*", route)
            page = context.new_page()
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url, wait_until="load")
            try:
                page.wait_for_function(
                    "() => [...document.querySelectorAll('div.plot')]"
                    ".every(d => d.querySelector('svg.main-svg') !== null)",
                    timeout=30_000,
                )
            except sync_api.TimeoutError:
                pytest.fail(f"the plots were not drawn in 30 s; console errors: {errors}")
            plots = page.evaluate(DRAWN)
            page.screenshot(path=str(_artifacts() / "report-local-run.png"), full_page=True)
        finally:
            browser.close()
    assert refused == [], f"the page fetched {refused}"
    assert errors == [], f"console errors: {errors}"
    # waste, failures, memory, time, cpus: each drawn, each with marks
    assert [p["id"] for p in plots] == [f"plot-{i}" for i in range(5)]
    assert all(p["drawn"] and p["marks"] > 0 for p in plots), plots
