"""The report's page in a real browser (Debian's Chromium), as a person reads it at 1400 and
800 px: offline, no console error, every plot drawn with its marks, the page never wider
than the screen, every table whole in its box, and no number in scientific notation."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from seqera_core.history import open_history
from seqera_core.report import write_report
from tests.chromium import look

RUN_ID = "local-run"  # the run conftest.local_history records
WIDTHS = (1400, 800)
# 2.8e-05, 1e+03, 5E-6: what a person must never have to read
# a number in scientific notation, not the digits of a job id's hex ("a3e7f1c2.4")
SCIENTIFIC = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][-+]?\d+(?!\w)")


@pytest.fixture(scope="module")
def seen(local_history: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[int, Any]:
    """The local run's page as Chromium shows it at each width (loaded once per width)."""
    history = open_history(local_history)
    page_path = write_report(history, [RUN_ID], tmp_path_factory.mktemp("page") / "report.html")
    history.close()
    return look(page_path, WIDTHS, "report-local-run")


def test_every_plot_is_drawn_offline_without_a_console_error(seen: dict[int, Any]) -> None:
    for width, view in seen.items():
        assert view["refused"] == [], f"the page fetched {view['refused']}"
        assert view["errors"] == [], f"console errors at {width} px: {view['errors']}"
        # waste, failures, timeline, memory, time, cpus: each drawn, each with marks
        assert [p["id"] for p in view["plots"]] == [f"plot-{i}" for i in range(6)]
        assert all(p["drawn"] and p["marks"] > 0 for p in view["plots"]), view["plots"]
        assert [p["title"].split(":")[0] for p in view["plots"]] == [
            "Memory per process", "Failed attempts by cause", "Timeline", "Memory", "Time",
            "CPU",
        ]  # fmt: skip
        # each plot as wide as the page lets it be, none beyond it
        assert all(width / 2 < p["width"] <= width for p in view["plots"]), view["plots"]


def test_what_a_person_reads_at_1400_and_800_px(seen: dict[int, Any]) -> None:
    for width, view in seen.items():
        text = view["text"]
        assert view["overflow"] <= 0, f"the page scrolls sideways at {width} px"
        # the tables keep every column, inside their box
        tables = {t["id"]: t for t in view["tables"]}
        assert tables["processes"]["columns"] == 9 and tables["advice"]["columns"] == 6
        assert all(t["overflow"] <= 1 for t in view["tables"]), (width, view["tables"])
        for words in ("12 (12 attempts, 9 succeeded)", "reserved by every attempt",
                      "1 out of memory", "longest run", "right-sizer next time",
                      "of its limit", "align", "index", "qc"):  # fmt: skip
            assert words in text, f"{words!r} not shown at {width} px"
        # CPU measured on the local backend: busy is a figure, not a gap
        assert "busy: not measured" not in text and "Not measured" not in text
        assert not SCIENTIFIC.search(text), SCIENTIFIC.search(text)
        assert not SCIENTIFIC.search(view["labels"]), SCIENTIFIC.search(view["labels"])
        assert "µ" not in view["labels"]  # no SI prefixes on an axis either


HOSTILE = ['<a href="https://example.invalid/">LINK</a>',
           '<span style="fill:red;font-size:40px">BIG</span>', "A&amp;B<br>C"]  # fmt: skip


def test_names_holding_plotly_markup_stay_text_in_the_plots(tmp_path: Path) -> None:
    from seqera_core.history import TaskRecord

    history = open_history(tmp_path / "h.db")
    history.record(
        TaskRecord("run", f"{i}-{n}", name, True, cpus=1, memory=2**30, time=600,
                   peak_memory=2**29, cpu_percent=80.0, realtime=60.0 + i, finished=1.8e9 + i)
        for n, name in enumerate(HOSTILE) for i in range(3)
    )  # fmt: skip
    page_path = write_report(history, ["run"], tmp_path / "report.html")
    history.close()
    (view,) = look(page_path, (1400,), "report-hostile-names").values()
    assert view["links"] == 0, view["links"]
    assert [s for s in view["styled"] if "red" in s or "40px" in s] == [], view["styled"]
    for name in HOSTILE:  # shown as written, markup and all
        assert name in view["labels"], (name, view["labels"][:2000])
