"""What both stores do the same way over their own connection: write an attempt with its
summaries, bring an older table up to date, and answer from the summaries and indexes.

A store supplies three things: ``_rows`` (one query, its rows), ``_transaction`` (work
done in one write transaction, writers one at a time) and ``_insert`` (one attempt
stored, its number back). Every read here costs what it returns, not what the history
holds: a summary row, a window of at most ``limit`` rows by an index, or the rows of the
runs named.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from . import _sql
from ._records import CpuUse, ProcessStats, TaskRecord
from ._tally import SUMMARY_COLUMNS, Fed, Summary, Totals, fold, stratum_key
from ._upgrade import fold_table

__all__ = ["Execute", "SummaryStore"]

Execute = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]
_T = TypeVar("_T")
_TOTALS = "last_seq, attempts, memory_runs, memory_total, time_runs, time_total"
# Rows read at a time (a tenth of it looking for the latest runs).
_CHUNK = 50_000
# How far back the latest runs are looked for: a history whose last 200,000 attempts
# belong to fewer runs than asked names those.
_RECENT_ROWS = 200_000


def _folded(record: TaskRecord) -> tuple[Any, ...]:
    """What summaries hold of an attempt: a replay that keeps these changes none."""
    return (record.process, record.succeeded, record.out_of_memory, record.time_limit,
            record.cpus, record.container, record.memory, record.time, record.peak_memory,
            record.cpu_percent, record.realtime)  # fmt: skip


def _counted(summary: Summary, kind: str) -> int:
    """At least how many attempts of ``summary`` count in the ``kind`` window."""
    return {"memory": summary.memory.runs, "time": summary.time.runs,
            "out_of_memory": summary.out_of_memory,
            "time_limit": summary.time_limit}[kind]  # fmt: skip


class SummaryStore:
    """The shared half of :class:`SqliteHistory` and :class:`PostgresHistory`."""

    _dialect: str

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[Any]:
        raise NotImplementedError

    def _transaction(self, work: Callable[[Execute], _T]) -> _T:
        raise NotImplementedError

    def _insert(
        self, execute: Execute, rows: Sequence[tuple[Any, ...]], replays: Sequence[bool]
    ) -> list[int]:
        raise NotImplementedError

    def _stored(
        self, execute: Execute, keys: Sequence[tuple[str, str, int]]
    ) -> dict[tuple[str, str, int], TaskRecord]:
        """The attempts already stored under ``keys`` (one indexed lookup each)."""
        p = self._param
        query = (f"SELECT {_sql.COLUMNS} FROM task_history WHERE run_id = {p} "
                 f"AND task_id = {p} AND attempt = {p}")  # fmt: skip
        found = {}
        for key in keys:
            rows = execute(query, key)
            if rows:
                found[key] = self._record(rows[0])
        return found

    @property
    def _param(self) -> str:
        return "?" if self._dialect == "sqlite" else "%s"

    @property
    def _cursor(self) -> str:
        return _sql.CURSOR[self._dialect]

    def _record(self, row: Sequence[Any]) -> TaskRecord:
        values = list(row)
        for index in _sql.FLAG_INDEX:  # SQLite hands booleans back as 0/1
            values[index] = bool(values[index])
        return TaskRecord(*values)

    # -- writing ---------------------------------------------------------------------

    def record(self, records: Iterable[TaskRecord]) -> int:
        """Store finished attempts in one transaction (a replayed one replaces itself), and
        fold the new ones into the summaries.

        A replay that changes nothing a summary holds (the same stream sent again) leaves
        them as they are. One that does (a record rewritten) folds its process's
        summaries again from its rows, in order, as reading them anew would, and moves the
        totals by the difference."""
        rows = [_sql.row(r) for r in records]

        def write(execute: Execute) -> int:
            keys = [(row[0], row[1], row[4]) for row in rows]
            stored = self._stored(execute, sorted(set(keys)))
            olds = []
            for key, row in zip(keys, rows, strict=True):
                olds.append(stored.get(key))
                stored[key] = self._record(row)  # a key twice in one batch: a replay
            seqs = self._insert(execute, rows, [old is not None for old in olds])
            fresh: list[tuple[int, TaskRecord]] = []
            rewritten: list[tuple[int, TaskRecord, TaskRecord]] = []
            for seq, row, old in zip(seqs, rows, olds, strict=True):
                record = self._record(row)
                if old is None:
                    fresh.append((seq, record))
                elif _folded(old) != _folded(record):
                    rewritten.append((seq, old, record))
            if fresh or rewritten:
                self._fold(execute, fresh, rewritten)
            return len(rows)

        return self._transaction(write)

    def _fold(
        self,
        execute: Execute,
        fresh: list[tuple[int, TaskRecord]],
        rewritten: list[tuple[int, TaskRecord, TaskRecord]],
    ) -> None:
        """Fold numbered attempts into the stored summaries and totals (in a transaction),
        and fold the processes of rewritten ones again from their rows."""
        p = self._param
        keys = {(r.process, s) for _, r in fresh for s in ("", stratum_key(r.cpus, r.container))}
        summaries = {}
        select = (f"SELECT {', '.join(SUMMARY_COLUMNS)} FROM task_summary "
                  f"WHERE process = {p} AND stratum = {p}")  # fmt: skip
        for process, stratum in keys:
            found = execute(select, (process, stratum))
            if found:
                summaries[(process, stratum)] = Summary.of(found[0])
        totals = self._totals(execute)
        changed = fold(totals, summaries, fresh)
        again: set[str] = set()
        for seq, before, after in rewritten:
            totals.swap(seq, before, after)
            again |= {before.process, after.process}
        self._store(execute, totals, [summaries[k] for k in sorted(changed) if k[0] not in again])
        for process in sorted(again):
            rows = execute(f"SELECT {self._cursor}, {_sql.COLUMNS} FROM task_history "
                           f"WHERE process = {p} ORDER BY {self._cursor}", (process,))  # fmt: skip
            anew: dict[tuple[str, str], Summary] = {}
            fold(Totals(), anew, ((row[0], self._record(row[1:])) for row in rows))
            execute(f"DELETE FROM task_summary WHERE process = {p}", (process,))
            self._store(execute, totals, [anew[k] for k in sorted(anew)])

    def _totals(self, execute: Execute) -> Totals:
        found = execute(f"SELECT {_TOTALS} FROM task_totals WHERE id = 1", ())
        return Totals(*found[0]) if found else Totals()

    def _store(self, execute: Execute, totals: Totals, summaries: Sequence[Summary]) -> None:
        p = self._param
        columns = ", ".join(SUMMARY_COLUMNS)
        update = ", ".join(f"{c} = excluded.{c}" for c in SUMMARY_COLUMNS[2:])
        upsert = (f"INSERT INTO task_summary ({columns}) VALUES "
                  f"({', '.join(p for _ in SUMMARY_COLUMNS)}) "
                  f"ON CONFLICT (process, stratum) DO UPDATE SET {update}")  # fmt: skip
        for summary in summaries:
            execute(upsert, summary.values())
        names = _TOTALS.split(", ")
        execute(
            f"INSERT INTO task_totals (id, version, {_TOTALS}) VALUES (1, {p}, "
            f"{', '.join(p for _ in names)}) ON CONFLICT (id) DO UPDATE SET "
            + ", ".join(f"{n} = excluded.{n}" for n in ("version", *names)),
            (_sql.VERSION, totals.last_seq, totals.attempts, totals.memory_runs,
             totals.memory_total, totals.time_runs, totals.time_total),
        )  # fmt: skip

    def _upgrade(self, execute: Execute, rebuild: bool = False) -> None:
        """Bring a version-1 table to the current layout (in the writers' transaction):
        the new tables, column and indexes, then the summaries of every attempt, built
        by the database (:mod:`._upgrade`). Once per history; a current one costs one query
        (``rebuild``: the attempts' table is older than the summaries beside it)."""
        present = execute("SELECT version FROM task_totals WHERE id = 1", ())
        if present and present[0][0] >= _sql.VERSION and not rebuild:
            return
        totals, summaries = fold_table(execute, self._dialect)  # by the database, set-based
        execute("DELETE FROM task_summary", ())
        self._store(execute, totals, summaries)

    # -- reading: the summaries ------------------------------------------------------

    def summaries(self, process: str | None = None) -> tuple[Totals, list[Summary]]:
        """The totals and every process's summary, oldest first (``process`` given: that
        process's own and its strata's), read together."""
        p = self._param
        where, params = ("stratum = ''", ()) if process is None else (f"process = {p}", (process,))

        def read(execute: Execute) -> tuple[Totals, list[Summary]]:
            rows = execute(f"SELECT {', '.join(SUMMARY_COLUMNS)} FROM task_summary "
                           f"WHERE {where} ORDER BY first_seq", params)  # fmt: skip
            return self._totals(execute), [Summary.of(row) for row in rows]

        return self._snapshot(read)

    def _snapshot(self, work: Callable[[Execute], _T]) -> _T:
        """Reads that see one state of the history (the stores' own snapshot)."""
        return work(self._rows)

    def stats(self, process: str) -> ProcessStats | None:
        """The process's history, or ``None`` if it never finished an attempt here."""
        found = self._rows(
            "SELECT succeeded, peak_memory, cpu_percent, realtime, out_of_memory, time_limit, "
            "failed_memory, failed_time FROM task_summary "
            f"WHERE process = {self._param} AND stratum = ''",
            (process,),
        )
        return ProcessStats(process, *found[0]) if found else None

    def cpu_use(self) -> list[CpuUse]:
        """Per process with successful runs that report both, the cores reserved and used."""
        rows = self._rows("SELECT process, cpu_runs, cpus_reserved, cpus_busy FROM task_summary "
                          "WHERE stratum = '' AND cpu_runs > 0 ORDER BY process")  # fmt: skip
        return [CpuUse(process, runs, reserved, busy / 100.0)
                for process, runs, reserved, busy in rows]  # fmt: skip

    def processes(self) -> list[str]:
        """Every process with at least one successful attempt, sorted."""
        rows = self._rows(
            "SELECT process FROM task_summary WHERE stratum = '' AND succeeded > 0 ORDER BY process"
        )
        return [row[0] for row in rows]

    def count(self) -> int:
        """How many attempts are stored."""
        found = self._rows("SELECT attempts FROM task_totals WHERE id = 1")
        return int(found[0][0]) if found else 0

    # -- reading: the attempts, by an index ------------------------------------------

    def window(self, summary: Summary, kind: str, through: int, limit: int) -> list[TaskRecord]:
        """The newest ``limit`` attempts of ``summary``'s process or stratum numbered up to
        ``through`` that count in the right-sizer's ``kind`` window, oldest first.

        The summary counts the attempts of each kind, so the scan stops at the last one
        there is: a process that never ran out of time reads no row, not every failure
        it ever had (the index walks a process's attempts newest first, not by kind)."""
        limit = min(limit, _counted(summary, kind))
        if limit <= 0:
            return []
        query, params = _sql.window(kind, summary.cpus, summary.container, summary.whole,
                                    self._dialect)  # fmt: skip
        rows = self._rows(query, (summary.process, *params, through, limit))
        return [self._record(row) for row in reversed(rows)]

    def windows(
        self, summary: Summary, through: int, limits: Mapping[str, int]
    ) -> dict[str, list[TaskRecord]]:
        """What :meth:`window` answers for each kind of ``limits`` (kind: limit), in fewer
        reads: the memory and the time windows come from one read of the newest runs that
        count in either, as long as it holds each window whole (the usual case: a run
        that reports its peak reports its run time), else from a read of their own."""
        wanted = {kind: min(limit, _counted(summary, kind)) for kind, limit in limits.items()}
        found: dict[str, list[TaskRecord]] = {}
        if wanted.get("memory", 0) > 0 and wanted.get("time", 0) > 0:
            limit = max(wanted["memory"], wanted["time"])
            query, params = _sql.window("measured", summary.cpus, summary.container,
                                        summary.whole, self._dialect)  # fmt: skip
            rows = self._rows(query, (summary.process, *params, through, limit))
            records = [(bool(row[0]), bool(row[1]), self._record(row[2:])) for row in rows]
            for index, kind in enumerate(("memory", "time")):
                own = [record for *flags, record in records if flags[index]][: wanted[kind]]
                # every run of either kind newer than the oldest read was read: the window
                # is whole when it has all it asks for, or when nothing older is left
                if len(own) == wanted[kind] or len(rows) < limit:
                    found[kind] = own[::-1]
        for kind, limit in limits.items():
            if kind not in found:
                found[kind] = self.window(summary, kind, through, limit)
        return found

    def first_declared(self, process: str) -> TaskRecord | None:
        """The earliest first attempt of ``process`` that was given cpus, memory or time.

        Two reads by the window's index (the process's failures, then its successes, each
        oldest first), each of one row unless the process's first attempts were given
        nothing: never the whole table."""
        first = []
        for succeeded in (False, True):
            rows = self._rows(_sql.declared(succeeded, self._dialect), (process,))
            first += [(int(row[0]), self._record(row[1:])) for row in rows]
        return min(first, key=lambda found: found[0])[1] if first else None

    def feed(self, after: int = 0, limit: int = 10_000) -> list[Fed]:
        """Attempts numbered after ``after``, oldest first, each with its number and
        whether it replayed one stored before."""
        rows = self._rows(
            f"SELECT {self._cursor}, replay, {_sql.COLUMNS} FROM task_history "
            f"WHERE {self._cursor} > {self._param} ORDER BY {self._cursor} LIMIT {self._param}",
            (after, limit),
        )
        return [Fed(int(row[0]), bool(row[1]), self._record(row[2:])) for row in rows]

    def attempts(self, after: int = 0, limit: int = 100_000) -> tuple[int, list[TaskRecord]]:
        """Attempts stored after cursor ``after`` (oldest first) and the cursor to pass next."""
        fed = self.feed(after, limit)
        if not fed:
            return after, []
        return fed[-1].seq, [f.record for f in fed]

    def records(self, run_ids: Sequence[str] = (), since: float | None = None) -> list[TaskRecord]:
        """Every attempt of the runs named (all when none), finished at or after ``since``:
        by the key's run id, or by the index of finish times."""
        where, params = _sql.filters(run_ids, since, self._param)
        rows = self._rows(
            f"SELECT {_sql.COLUMNS} FROM task_history{where} ORDER BY {self._cursor}", params
        )
        return [self._record(row) for row in rows]

    def recent_runs(self, limit: int = 5) -> list[str]:
        """The ``limit`` runs that stored attempts last, the latest last: read backwards
        from the newest attempt, never the whole table."""
        runs: dict[str, None] = {}
        before = math.inf
        read = 0
        p = self._param
        while len(runs) < limit and read < _RECENT_ROWS:
            rows = self._rows(
                f"SELECT {self._cursor}, run_id FROM task_history "
                + ("" if before == math.inf else f"WHERE {self._cursor} < {p} ")
                + f"ORDER BY {self._cursor} DESC LIMIT {p}",
                ((), (before,))[before != math.inf] + (_CHUNK // 10,),
            )
            if not rows:
                break
            read += len(rows)
            for _, run in rows:
                runs.setdefault(run, None)
                if len(runs) == limit:
                    break
            before = rows[-1][0]
        return list(reversed(runs))
