"""The history's summaries, windows and indexed queries, on SQLite and on a real PostgreSQL
(tests/postgres.py): what a run, a resolve and the report read instead of the whole table."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from seqera_core.history import (
    Fed,
    History,
    Summary,
    TaskRecord,
    _sql,
    open_history,
)
from seqera_core.history._sqlite import SqliteHistory
from seqera_core.models import ResourceRequest
from seqera_core.report import summary_lines
from seqera_core.resolvers import PredictiveResolver
from seqera_core.units import GIB, MIB
from tests.seqera_core.folding import fold_every_row, write_version_one


def _task(run: str, task: int, process: str, **fields: Any) -> TaskRecord:
    """A successful attempt unless told otherwise; its use grows with the task number."""
    fields.setdefault("succeeded", True)
    if fields["succeeded"]:
        fields.setdefault("peak_memory", (task % 37 + 1) * 10 * MIB)
        fields.setdefault("realtime", float(task % 11 + 1))
    return TaskRecord(run, str(task), process, memory=GIB, time=3600,
                      input_bytes=(task % 23 + 1) * MIB, **fields)  # fmt: skip


def _mixed(run: str, n: int) -> list[TaskRecord]:
    """Three processes, two strata of ALIGN, failures of both kinds."""
    out = []
    for i in range(n):
        out.append(
            _task(run, i, "ALIGN", cpus=[2, 8][i % 2], container=[None, "bwa:1"][i % 3 == 0])
        )
        out.append(_task(run, 10_000 + i, "SORT", cpus=1.0, cpu_percent=80.0 + i % 5))
        if i % 9 == 0:
            out.append(_task(run, 20_000 + i, "ALIGN", succeeded=False, out_of_memory=True))
        if i % 13 == 0:
            out.append(_task(run, 30_000 + i, "CALL", succeeded=False, time_limit=True))
    return out


def _same(kept: Summary, anew: Summary) -> None:
    for name in _sql.SUMMARY_COLUMNS[:18]:
        if name not in ("first_seq", "last_seq"):  # a replay moves the row, not the fold
            assert getattr(kept, name) == getattr(anew, name), name
    for quantity in ("memory", "time"):
        a, b = getattr(kept, quantity), getattr(anew, quantity)
        assert (a.runs, a.largest, a.top, a.second) == (b.runs, b.largest, b.top, b.second)
        # a replay of the same values is folded where it first came: the same sums in
        # another order
        assert a.mean == pytest.approx(b.mean, rel=1e-12)
        assert a.m2 == pytest.approx(b.m2, rel=1e-9, abs=1e-12)


def test_summaries_are_what_reading_every_row_gives(store: tuple[History, str]) -> None:
    history, _ = store
    for batch in range(3):
        history.record(_mixed(f"run{batch}", 40))
    history.record(_mixed("run1", 5))  # the same stream again: replaced, folded once
    rewritten = _task("run0", 4, "ALIGN", cpus=2, peak_memory=5 * GIB, realtime=99.0)
    history.record([rewritten])  # a record rewritten: ALIGN is folded again
    totals, summaries = history.summaries()
    expected_totals, expected = fold_every_row(history)
    assert [s.process for s in summaries] == ["ALIGN", "SORT", "CALL"]  # as they first came
    assert (totals.attempts, totals.memory_runs, totals.time_runs) == (
        expected_totals.attempts,
        expected_totals.memory_runs,
        expected_totals.time_runs,
    )
    assert totals.memory_total == pytest.approx(expected_totals.memory_total, rel=1e-12)
    assert history.count() == totals.attempts == 3 * len(_mixed("r", 40))
    for process in ("ALIGN", "SORT", "CALL"):
        _, own = history.summaries(process)
        assert {s.stratum for s in own} == {k[1] for k in expected if k[0] == process}
        for summary in own:
            _same(summary, expected[(process, summary.stratum)])
    stats = history.stats("ALIGN")
    assert stats is not None and stats.peak_memory == 5 * GIB and stats.realtime == 99.0
    assert history.stats("CALL") is not None and history.processes() == ["ALIGN", "SORT"]
    (use,) = [u for u in history.cpu_use() if u.process == "SORT"]
    assert (use.runs, use.reserved, use.busy) == (120, 1.0, 0.84)


def test_windows_are_the_newest_of_their_stratum(store: tuple[History, str]) -> None:
    history, _ = store
    history.record(_mixed("run0", 300))
    _, summaries = history.summaries("ALIGN")
    strata = {s.stratum: s for s in summaries}
    whole = strata[""]
    rows = history.window(whole, "memory", whole.last_seq, 200)
    everything = [f for f in history.feed(0, 100_000) if f.record.process == "ALIGN"]
    successes = [f.record for f in everything if f.record.succeeded]
    assert rows == successes[-200:]  # the newest 200, oldest first
    kills = history.window(whole, "out_of_memory", whole.last_seq, 64)
    assert kills == [f.record for f in everything if f.record.out_of_memory][-64:]
    assert history.window(whole, "time_limit", whole.last_seq, 64) == []
    one = next(s for s in summaries if s.cpus == 8 and s.container is None)
    own = history.window(one, "time", one.last_seq, 1000)
    assert own and all(r.cpus == 8 and r.container is None for r in own)
    assert own == [r for r in successes if r.cpus == 8 and r.container is None]
    # only what was stored up to the number asked for
    middle = everything[len(everything) // 2].seq
    assert history.window(whole, "memory", middle, 10)[-1] == next(
        f.record for f in reversed(everything) if f.seq <= middle and f.record.succeeded
    )


def test_recent_runs_and_the_runs_asked_for(store: tuple[History, str]) -> None:
    history, _ = store
    for n in range(8):
        history.record([_task(f"run{n}", i, "ALIGN", finished=1000.0 * n + i) for i in range(30)])
    assert history.recent_runs(3) == ["run5", "run6", "run7"]
    assert {r.run_id for r in history.records(["run2"])} == {"run2"}
    assert len(history.records(["run2", "run3"])) == 60
    assert {r.run_id for r in history.records(since=6000.0)} == {"run6", "run7"}


def _plans(location: str, queries: Sequence[tuple[str, Sequence[Any]]]) -> list[str]:
    """How the database would run each query."""
    if location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(location, autocommit=True) as pg:
            pg.execute("SET enable_seqscan = off")  # a tiny table: say what an index would do
            return ["\n".join(str(row[0]) for row in pg.execute(f"EXPLAIN {q}", p).fetchall())
                    for q, p in queries]  # fmt: skip
    db = sqlite3.connect(location)
    try:
        return ["\n".join(str(row[-1]) for row in db.execute(f"EXPLAIN QUERY PLAN {q}",
                p).fetchall()) for q, p in queries]  # fmt: skip
    finally:
        db.close()


def test_every_query_of_a_run_a_resolve_and_the_report_is_indexed(
    store: tuple[History, str],
) -> None:
    history, location = store
    history.record(_mixed("run0", 50))
    dialect = "sqlite" if "://" not in location else "postgresql"
    p = "?" if dialect == "sqlite" else "%s"
    _, summaries = history.summaries("ALIGN")
    queries = []
    for summary in summaries:
        for kind in [*_sql.WINDOWS, "measured"]:
            query, params = _sql.window(kind, summary.cpus, summary.container, summary.whole,
                                        dialect)  # fmt: skip
            queries.append((query, ["ALIGN", *params, 10**9, 200]))
    # what a process declared: by the windows' index, in its order (no sort of its rows)
    declared = [(_sql.declared(succeeded, dialect), ["ALIGN"]) for succeeded in (False, True)]
    queries += declared
    for run_ids, since in ((["run0"], None), ((), 5.0)):
        where, params = _sql.filters(run_ids, since, p)
        queries.append((f"SELECT {_sql.COLUMNS} FROM task_history{where}", params))
    cursor = _sql.CURSOR[dialect]
    queries.append((f"SELECT run_id FROM task_history WHERE {cursor} > {p} ORDER BY {cursor}",
                    [5]))  # fmt: skip
    for plan in _plans(location, queries):
        if dialect == "sqlite":
            assert "SCAN task_history" not in plan and "USING" in plan, plan
        else:
            assert "Seq Scan" not in plan and "Index" in plan, plan
    for plan in _plans(location, declared):
        assert "TEMP B-TREE" not in plan and "Sort" not in plan, plan


def _version_one(location: str, records: list[TaskRecord]) -> None:
    """A history as the first release wrote it: the attempts' table alone."""
    dialect = "postgresql" if location.startswith("postgresql://") else "sqlite"
    write_version_one(location, [_sql.row(r) for r in records], dialect)


def _answers(history: History, records: list[TaskRecord]) -> list[Any]:
    resolver = PredictiveResolver(history)
    out = []
    for record in records[::7]:
        for attempt in (1, 2):
            answer = resolver.resolve(ResourceRequest(
                cpus=record.cpus, memory=GIB, process=record.process, attempt=attempt,
                input_bytes=record.input_bytes, container=record.container))  # fmt: skip
            out.append(None if answer is None else (answer.cpus, answer.memory, answer.time))
    return out


def _alike(history: History, reference: History) -> None:
    for process in (None, "ALIGN"):
        (totals, kept), (expected_totals, anew) = (
            history.summaries(process), reference.summaries(process))  # fmt: skip
        assert totals.attempts == expected_totals.attempts
        assert totals.memory_total == pytest.approx(expected_totals.memory_total, rel=1e-12)
        assert [s.stratum for s in kept] == [s.stratum for s in anew]
        for summary, expected in zip(kept, anew, strict=True):
            _same(summary, expected)


def test_an_older_history_gains_its_summaries_when_opened(
    store: tuple[History, str], tmp_path: Path
) -> None:
    _, location = store
    records = _mixed("run0", 120)
    older = str(tmp_path / "older.db")
    if "://" in location:
        import psycopg

        with psycopg.connect(location, autocommit=True) as admin:
            admin.execute("DROP DATABASE IF EXISTS older")
            admin.execute("CREATE DATABASE older")
        older = location.rsplit("/", 1)[0] + "/older"
    _version_one(older, records)
    upgraded = open_history(older)
    try:
        reference = open_history(":memory:")
        reference.record(records)
        # built by the database (history._upgrade): the log moments are the same sums in
        # another order; test_history_upgrade holds it to the row-by-row fold
        _alike(upgraded, reference)
        assert _answers(upgraded, records) == _answers(reference, records)
        # what it learns next, it learns as a new history does
        more = _mixed("run1", 30)
        upgraded.record(more)
        reference.record(more)
        _alike(upgraded, reference)
    finally:
        upgraded.close()


class _Counting:
    """A history that counts the attempts it hands out (the summaries are not attempts)."""

    def __init__(self, inner: History) -> None:
        self.inner = inner
        self.fetched: list[TaskRecord] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def window(self, *args: Any) -> list[TaskRecord]:
        rows = self.inner.window(*args)
        self.fetched += rows
        return rows

    def windows(self, *args: Any) -> dict[str, list[TaskRecord]]:
        found = self.inner.windows(*args)
        for rows in found.values():
            self.fetched += rows
        return found

    def first_declared(self, *args: Any) -> TaskRecord | None:
        found = self.inner.first_declared(*args)
        self.fetched += [] if found is None else [found]
        return found

    def feed(self, *args: Any) -> list[Fed]:
        fed = self.inner.feed(*args)
        self.fetched += [f.record for f in fed]
        return fed

    def records(self, *args: Any, **kwargs: Any) -> list[TaskRecord]:
        rows = self.inner.records(*args, **kwargs)
        self.fetched += rows
        return rows

    def attempts(self, *args: Any) -> tuple[int, list[TaskRecord]]:
        cursor, rows = self.inner.attempts(*args)
        self.fetched += rows
        return cursor, rows


def _fetched_by_a_run(history: History) -> list[TaskRecord]:
    """What sizing one task of ALIGN and the end-of-run summary of its run read."""
    counting = _Counting(history)
    resolver = PredictiveResolver(counting)  # type: ignore[arg-type]
    answer = resolver.resolve(ResourceRequest(cpus=2, memory=GIB, process="ALIGN"))
    assert answer is not None and answer.memory < GIB
    history.record([_task("this-run", 1, "ALIGN", cpus=2)])
    assert summary_lines(counting, "this-run")  # type: ignore[arg-type]
    return counting.fetched


def test_a_run_reads_only_the_processes_it_sizes(store: tuple[History, str]) -> None:
    history, _ = store
    history.record(_mixed("run0", 1300))  # every window of ALIGN's full already
    small = _fetched_by_a_run(history)
    for n in range(1, 4):  # four times the history
        history.record(_mixed(f"run{n}", 1300))
    large = _fetched_by_a_run(history)
    assert {r.process for r in small} == {r.process for r in large} == {"ALIGN"}
    # twice (the resolver, the summary's advice) ALIGN and its 5 strata (the kills have
    # no cpus): 200 runs that used memory, 200 that took time, 64 kills; the run's rows
    assert len(small) <= len(large) <= len(small) + 1 <= 2 * 6 * (200 + 200 + 64) + 2


def test_a_window_stops_at_the_last_attempt_of_its_kind(tmp_path: Path) -> None:
    # ALIGN ran out of memory often and never out of time: its time-limit window reads
    # nothing, not every failure it ever had (the index walks them newest first).
    history = SqliteHistory(tmp_path / "h.db")
    steps = []
    for n in range(3):
        history.record(_mixed(f"run{n}", 500))
        _, summaries = history.summaries("ALIGN")
        whole = next(s for s in summaries if s.whole)
        counted = [0]

        def step(counted: list[int] = counted) -> int:
            counted[0] += 1
            return 0

        history._db.set_progress_handler(step, 10)
        assert history.window(whole, "time_limit", whole.last_seq, 64) == []
        history._db.set_progress_handler(None, 0)
        steps.append(counted[0])
        assert len(history.window(whole, "out_of_memory", whole.last_seq, 64)) == min(
            64, 56 * (n + 1)
        )
    assert steps == [0, 0, 0]
    history.close()
