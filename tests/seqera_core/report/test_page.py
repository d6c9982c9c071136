"""The page: self-contained, escaped, carrying its figures; and the engines' entry points."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import seqera_core.report as report_package
from seqera_core.history import TaskRecord, open_history
from seqera_core.report import EXTRA_MISSING, build, document, render, summary_lines, write_report
from seqera_core.units import GIB, MIB

RUN_ID = "local-run"  # the run conftest.local_history records
HOSTILE = "</script><script>alert(1)</script>"


def test_the_public_face_is_sorted_and_exists() -> None:
    names = report_package.__all__
    # ruff's order (RUF022): constants, then classes, then functions, each alphabetical
    assert names == sorted(names, key=lambda n: (not n.isupper(), not n[0].isupper(), n))
    assert all(hasattr(report_package, name) for name in names)


def test_the_page_fetches_nothing_and_carries_its_figures(local_history: Path) -> None:
    history = open_history(local_history)
    report = build(history, [RUN_ID])
    page = render(report)
    history.close()
    # every script inline, no stylesheet, image or frame from anywhere
    assert not re.search(r"<(script|link|img|iframe)[^>]*\b(src|href)=", page, re.IGNORECASE)
    # waste, failures, timeline, memory, time, cpus
    assert "Plotly.newPlot" in page and page.count('class="plot"') == 6
    embedded = re.search(r'<script type="application/json" id="figures">(.*?)</script>', page, re.S)
    assert embedded is not None
    figures = json.loads(embedded.group(1))
    assert figures["processes"] == document(report)["processes"]


def test_names_from_the_history_cannot_break_the_page() -> None:
    history = open_history(":memory:")
    history.record(
        [TaskRecord("r", f"{HOSTILE}{i}", HOSTILE, True, memory=GIB, peak_memory=i * MIB,
                    realtime=60.0) for i in range(1, 6)]
    )  # fmt: skip
    page = render(build(history))
    assert HOSTILE not in page
    # the only </script> closers are the page's own: plotly.js, four plots, the JSON
    assert page.count("</script>") == 1 + 4 + 1
    assert "&lt;/script&gt;" in page  # shown as text in the table


def test_write_report_and_summary_lines(local_history: Path, tmp_path: Path) -> None:
    history = open_history(local_history)
    target = write_report(history, [RUN_ID], tmp_path / "out" / "report.html")
    assert target.read_text().startswith("<!DOCTYPE html>")
    assert [p.name for p in target.parent.iterdir()] == ["report.html"]  # no partial left
    lines = summary_lines(history, RUN_ID, limit=2)
    history.close()
    assert lines[0].startswith("12 tasks, 3 failed (1 out of memory, 1 time limit, 1 other)")
    assert 2 <= len(lines) <= 4
    assert lines[-1].startswith("the right-sizer would have saved")


def test_without_plotly_the_page_asks_for_the_extra(local_history: Path, tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['plotly'] = None\n"  # as if the extra were not installed
        "from seqera_core.cli import main\n"
        f"sys.exit(main(['report', '--history', {str(local_history)!r}, '-o', "
        f"{str(tmp_path / 'r.html')!r}]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert EXTRA_MISSING in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("limit", [0, 1, 3])
def test_summary_lines_limit(local_history: Path, limit: int) -> None:
    history = open_history(local_history)
    lines = summary_lines(history, RUN_ID, limit)
    history.close()
    worst = [line for line in lines if line.startswith("  ")]
    assert len(worst) <= limit
