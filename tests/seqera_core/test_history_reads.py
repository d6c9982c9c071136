"""Reads that replace per-kind and whole-table reads, on SQLite and on a real PostgreSQL
(tests/postgres.py): the windows of a process read together, a process's declared values
by an index, and the report of one run, each against the reads they replace."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from typing import Any

import pytest

from seqera_core.history import History, Summary, TaskRecord
from seqera_core.report import build, document
from seqera_core.units import GIB, MIB

_LIMITS = {"memory": 200, "time": 200, "out_of_memory": 64, "time_limit": 64}


def _task(run: str, task: int, process: str, **fields: Any) -> TaskRecord:
    """A successful first attempt unless told otherwise; its use grows with the task."""
    fields.setdefault("succeeded", True)
    if fields["succeeded"]:
        fields.setdefault("peak_memory", (task % 37 + 1) * 10 * MIB)
        fields.setdefault("realtime", float(task % 11 + 1))
    fields.setdefault("memory", GIB)
    fields.setdefault("time", 3600)
    return TaskRecord(run, str(task), process, input_bytes=(task % 23 + 1) * MIB, **fields)


def _run(run: str, n: int) -> list[TaskRecord]:
    """ALIGN in two strata with kills of both kinds; SORT in one; PEAK whose runs report a
    peak and only every third its run time (the memory and time windows differ); TIME
    whose runs report a run time and no peak."""
    out = []
    for i in range(n):
        out.append(_task(run, i, "ALIGN", cpus=[2, 8][i % 2]))
        out.append(_task(run, 10_000 + i, "SORT", cpus=1.0))
        out.append(_task(run, 20_000 + i, "PEAK", realtime=None if i % 3 else 5.0))
        out.append(_task(run, 30_000 + i, "TIME", peak_memory=None))
        if i % 9 == 0:
            out.append(_task(run, 40_000 + i, "ALIGN", succeeded=False, out_of_memory=True))
        if i % 13 == 0:
            out.append(_task(run, 50_000 + i, "ALIGN", succeeded=False, time_limit=True,
                             attempt=2))  # fmt: skip
    return out


def _kind_by_kind(
    history: History, summary: Summary, through: int, limits: Mapping[str, int]
) -> dict[str, list[TaskRecord]]:
    return {kind: history.window(summary, kind, through, n) for kind, n in limits.items()}


@pytest.mark.parametrize("runs", [30, 400])  # windows not full yet; full, older runs left
def test_windows_read_together_are_the_windows_read_one_by_one(
    store: tuple[History, str], runs: int
) -> None:
    history, _ = store
    history.record(_run("run0", runs))
    for process in ("ALIGN", "SORT", "PEAK", "TIME"):
        _, summaries = history.summaries(process)
        for summary in summaries:
            for through in (summary.last_seq, summary.last_seq // 2):
                for limits in (_LIMITS, {"memory": 7, "time": 150}, {"time": 5}):
                    together = history.windows(summary, through, limits)
                    assert together == _kind_by_kind(history, summary, through, limits)
    # PEAK's time window is older than the newest 200 runs that count in either window
    _, (peak, *_) = history.summaries("PEAK")
    timed = len(range(0, runs, 3))
    assert len(history.windows(peak, peak.last_seq, _LIMITS)["time"]) == min(200, timed)


def test_a_stratum_of_every_attempt_has_its_process_windows(store: tuple[History, str]) -> None:
    # what lets the right-sizer read such a stratum's windows once, with its process's
    history, _ = store
    history.record(_run("run0", 250))
    _, summaries = history.summaries("SORT")
    whole = next(s for s in summaries if s.whole)
    (stratum,) = [s for s in summaries if not s.whole]
    assert (stratum.attempts, stratum.last_seq) == (whole.attempts, whole.last_seq)
    assert history.windows(stratum, stratum.last_seq, _LIMITS) == history.windows(
        whole, whole.last_seq, _LIMITS
    )


def _insert_raw(location: str, record: TaskRecord, **raw: Any) -> None:
    """An attempt as an older writer stored it, with values outside the contract's bounds."""
    from seqera_core.history import _sql

    values = dict(zip(_sql.FIELDS, _sql.row(record), strict=True)) | raw
    if location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(location, autocommit=True) as pg:
            marks = ", ".join("%s" for _ in values)
            pg.execute(f"INSERT INTO task_history ({', '.join(values)}) VALUES ({marks})",
                       list(values.values()))  # fmt: skip
        return
    db = sqlite3.connect(location)
    marks = ", ".join("?" for _ in values)
    db.execute(f"INSERT INTO task_history ({', '.join(values)}) VALUES ({marks})",
               list(values.values()))  # fmt: skip
    db.commit()
    db.close()


def _declared_by_every_row(history: History) -> dict[str, tuple[Any, ...]]:
    """The earliest first attempt given something, per process, read from every row."""
    found: dict[str, tuple[Any, ...]] = {}
    for r in history.records():
        if r.attempt == 1 and r.process not in found and (r.cpus, r.memory, r.time) != (
            None, None, None,
        ):  # fmt: skip
            found[r.process] = (r.cpus, r.memory, r.time)
    return found


def test_what_a_process_declared_is_read_by_an_index(store: tuple[History, str]) -> None:
    history, location = store
    # stored out of bounds: read as not given, so the next first attempt says it
    _insert_raw(location, _task("old", 1, "SORT", cpus=None, memory=None, time=None),
                cpus=1e9, time=-5)  # fmt: skip
    history.record([
        _task("r", 1, "SORT", cpus=None, memory=None, time=None),  # given nothing
        _task("r", 2, "SORT", succeeded=False, out_of_memory=True, cpus=4, memory=2 * GIB),
        _task("r", 2, "SORT", attempt=2, cpus=4, memory=4 * GIB),
        _task("r", 3, "SORT", cpus=3),
        _task("r", 4, "ALIGN", attempt=2, cpus=8),  # a retry is not what was declared
        _task("r", 5, "ALIGN", cpus=2, memory=GIB, time=60),
        _task("r", 6, "NOTHING", cpus=None, memory=None, time=None),
    ])  # fmt: skip
    history.record(_run("run1", 20))
    expected = _declared_by_every_row(history)
    assert expected["SORT"] == (4, 2 * GIB, 3600)  # the failed first attempt came first
    for process in ("SORT", "ALIGN", "PEAK", "TIME", "NOTHING", "NEVER"):
        found = history.first_declared(process)
        got = None if found is None else (found.cpus, found.memory, found.time)
        assert got == expected.get(process), process


def _one_by_one(history: History) -> Any:
    """The history as the report read it before: each window by a read of its own."""

    class OneByOne:
        def __getattr__(self, name: str) -> Any:
            return getattr(history, name)

        def windows(
            self, summary: Summary, through: int, limits: Mapping[str, int]
        ) -> dict[str, list[TaskRecord]]:
            return _kind_by_kind(history, summary, through, limits)

    return OneByOne()


def test_the_report_of_one_run_is_what_reading_each_window_gives(
    store: tuple[History, str],
) -> None:
    history, _ = store
    for n in range(3):
        history.record(_run(f"run{n}", 90))
    history.record([_task("run3", 7, "ALIGN", cpus=2), _task("run3", 8, "TIME", cpus=1)])
    for runs in (["run1"], ["run3"], []):
        now = document(build(history, runs))
        before = document(build(_one_by_one(history), runs))
        now.pop("generated"), before.pop("generated")
        assert now == before
        assert now["processes"] and any(p["advice"] for p in now["processes"])
