"""The page's routing section and the timeline by backend, read from the HTML and the
charts' data (the browser test looks at them drawn)."""

from __future__ import annotations

import re
from pathlib import Path

import attrs

from seqera_core.history import TaskRecord, open_history
from seqera_core.report import build, render, summary_lines
from seqera_core.report._charts import timeline
from seqera_core.report._routed import routing_section

from .conftest import ROUTED_PLATFORM, ROUTED_RUN, _why, routed_records

RUN_ID = "local-run"  # the run conftest.local_history records
SCIENTIFIC = re.compile(r"(?<![\w.])\d+(?:\.\d+)?[eE][-+]?\d+(?!\w)")


def _section(page: str) -> str:
    start = page.index('<h2 id="per-backend">')
    return page[start : page.index("<h2>Per process</h2>")]


def _page(records: list[TaskRecord]) -> str:
    history = open_history(":memory:")
    history.record(records)
    try:
        return render(build(history, platform=ROUTED_PLATFORM))
    finally:
        history.close()


def test_a_routed_run_shows_each_backend_and_the_saving() -> None:
    section = _section(_page(routed_records()))
    backends = re.search(r'<table id="backends">(.*?)</table>', section, re.S)
    assert backends is not None
    head = re.findall(r"<th>(.*?)</th>", backends.group(1))
    assert head == ["backend", "tasks", "run time h", "CPU core·h reserved", "busy",
                    "memory GB·h requested", "used", "cost", "why its jobs went there"]  # fmt: skip
    assert "<td>local</td><td>31, 1 failed</td>" in section
    assert "6 jobs: the only backend that could run it (local: too many cores)" in section
    assert "31 jobs: finishes first" in section
    saving = re.search(r'<p id="saving">(.*?)</p>', section, re.S)
    assert saving is not None
    assert saving.group(1) == (
        "Routed, the tasks ended 4.70 s sooner than all on slurm, the fastest alone and "
        "&lt; 0.01 cheaper than all on slurm, the cheapest alone (an estimate: see below)."
    )
    assert "<td>all on local</td><td>6 (too many cores)</td><td>could not</td>" in section
    assert "<td>4.70 s later</td>" in section  # all on slurm, against routed
    assert "58 cores at once, 5.00 s wait a task" in section
    assert "How this is estimated" in section


def test_reasons_are_never_shown_raw_nor_in_exponent_form() -> None:
    records = routed_records()
    # a reason with an estimate of 1,300 s, which the policy writes as 1.3e+03 s
    records[0] = attrs.evolve(records[0], route="finish: local finish in 1.3e+03 s "
                              "(slurm 1.9e+03 s)")  # fmt: skip
    section = _section(_page(records))
    assert "finish:" not in section and not SCIENTIFIC.search(section)


def test_one_backend_shows_no_section_and_names_are_escaped(local_history: Path) -> None:
    history = open_history(local_history)
    try:
        page = render(build(history, [RUN_ID]))
    finally:
        history.close()
    assert 'id="per-backend"' not in page and 'id="backends"' not in page
    assert routing_section(None) == ""
    hostile = [attrs.evolve(r, backend="<b>slurm</b>") if r.backend == "slurm" else r
               for r in routed_records()]  # fmt: skip
    section = _section(_page(hostile))
    assert "<b>slurm</b>" not in section and "&lt;b&gt;slurm&lt;/b&gt;" in section


def test_no_single_backend_could_run_everything() -> None:
    records = [r for r in routed_records() if r.process in ("align", "index")]
    # the index jobs could not have gone to the cluster either (no such partition, say)
    records = [attrs.evolve(r, route=_why(local=(0.3, 1.2, 0.0), slurm="has no queue 'short'"))
               if r.process == "index" else r for r in records]  # fmt: skip
    section = _section(_page(records))
    assert "No single backend could have run every task" in section
    assert "<td>all on slurm</td><td>24 (no such queue)</td>" in section


def test_the_timeline_is_by_backend_when_several_ran_it() -> None:
    history = open_history(":memory:")
    history.record(routed_records())
    report = build(history, [ROUTED_RUN])
    history.close()
    data, layout = timeline(report.timeline)
    assert [trace["name"] for trace in data] == ["local", "slurm"]
    assert data[0]["marker"]["color"] != data[1]["marker"]["color"]
    # the failed attempt (killed for memory, locally) is hatched; the others are not
    local_shapes = data[0]["marker"]["pattern"]["shape"]
    assert local_shapes.count("x") == 1 and len(local_shapes) == 31
    assert "by backend" in layout["title"]["text"]


def test_the_timeline_of_one_backend_is_by_outcome(local_history: Path) -> None:
    history = open_history(local_history)
    report = build(history, [RUN_ID])
    history.close()
    data, layout = timeline(report.timeline)
    assert {trace["name"] for trace in data} >= {"succeeded", "out of memory"}
    assert all("pattern" not in trace["marker"] for trace in data)
    assert "by backend" not in layout["title"]["text"]


def test_the_end_of_run_summary_names_the_backends_and_the_saving(routed_history: Path) -> None:
    history = open_history(routed_history)
    try:
        lines = summary_lines(history, ROUTED_RUN)
    finally:
        history.close()
    assert lines[1] == ("backends: local 31 tasks, slurm 11 tasks; routed, 4.70 s sooner than "
                        "all on slurm alone (an estimate)")  # fmt: skip
    assert lines[-1].startswith("the right-sizer would have saved")
