"""A routed run's page in a real browser (Debian's Chromium) at 1400 and 800 px: the
per-backend and the saving tables whole in their boxes with every column shown, the
timeline coloured by backend, no number in scientific notation."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from seqera_core.history import open_history
from seqera_core.report import write_report
from tests.chromium import look

from .conftest import ROUTED_PLATFORM, ROUTED_RUN

WIDTHS = (1400, 800)
SCIENTIFIC = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][-+]?\d+(?!\w)")
BACKENDS_HEAD = ("backend", "tasks", "run time h", "CPU core·h reserved", "busy",
                 "memory GB·h requested", "used", "cost", "why its jobs went there")  # fmt: skip
ROUTING_HEAD = ("where", "tasks it could not run", "finish min", "against routed", "cost",
                "assumed there")  # fmt: skip


@pytest.fixture(scope="module")
def seen(routed_history: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[int, Any]:
    """The routed run's page as Chromium shows it at each width."""
    history = open_history(routed_history)
    target = tmp_path_factory.mktemp("routed-page") / "report.html"
    page_path = write_report(history, [ROUTED_RUN], target, platform=ROUTED_PLATFORM)
    history.close()
    return look(page_path, WIDTHS, "report-routed-run")


def test_the_routing_tables_keep_every_column_at_1400_and_800_px(seen: dict[int, Any]) -> None:
    for width, view in seen.items():
        assert view["refused"] == [] and view["errors"] == [], (width, view["errors"])
        assert view["overflow"] <= 0, f"the page scrolls sideways at {width} px"
        tables = {t["id"]: t for t in view["tables"]}
        assert tables["backends"]["columns"] == len(BACKENDS_HEAD)
        assert tables["routing"]["columns"] == len(ROUTING_HEAD)
        for name in ("backends", "routing"):
            assert tables[name]["overflow"] <= 1, (width, tables[name])
        text = view["text"]
        for words in (*BACKENDS_HEAD, *ROUTING_HEAD, "Per backend",
                      "What routing saved (an estimate)", "31 jobs: finishes first",
                      "6 jobs: the only backend that could run it (local: too many cores)",
                      "4.70 s sooner than all on slurm", "all on local", "6 (too many cores)",
                      "How this is estimated"):  # fmt: skip
            assert words in text, f"{words!r} not shown at {width} px"
        assert not SCIENTIFIC.search(text), SCIENTIFIC.search(text)
        assert not SCIENTIFIC.search(view["labels"]), SCIENTIFIC.search(view["labels"])


def test_the_timeline_is_drawn_by_backend(seen: dict[int, Any]) -> None:
    for width, view in seen.items():
        plots = {p["title"].split(":")[0]: p for p in view["plots"]}
        timeline = plots["Timeline"]
        assert timeline["drawn"] and "by backend" in timeline["title"], (width, timeline)
        # the legend names the backends
        labels = view["labels"].split("\n")
        assert "local" in labels and "slurm" in labels, (width, labels[:40])
