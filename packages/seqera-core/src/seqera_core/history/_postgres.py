"""The task history on PostgreSQL: one table a team shares, written by many runs at once.

Same rows and answers as the SQLite store; a ``seq`` column (a sequence) is the cursor
``attempts()`` reads from, and a replayed attempt takes a new one. Writers take turns (a
transaction-scoped advisory lock), so numbers commit in order: otherwise a reader past
number N would never see a row numbered below N that committed later. A dropped
connection (a server restart) is opened again once per call before the call fails.
Needs the ``postgresql`` extra (psycopg).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from ..errors import HistoryError
from ..redaction import masked, redacted
from . import _sql
from ._records import CpuUse, ProcessStats, TaskRecord

__all__ = ["PostgresHistory"]

# Advisory lock keys: creating the table, and writing rows (one writer at a time).
_CREATE, _WRITERS = 7011, 7012
_UPSERT = (
    f"INSERT INTO task_history ({_sql.COLUMNS}) "
    f"VALUES ({', '.join('%s' for _ in _sql.FIELDS)}) "
    "ON CONFLICT (run_id, task_id, attempt) DO UPDATE SET "
    + ", ".join(f"{f} = EXCLUDED.{f}" for f in _sql.FIELDS if f not in _sql.KEY)
    + ", seq = nextval(pg_get_serial_sequence('task_history', 'seq'))"
)
_T = TypeVar("_T")


class PostgresHistory:
    """The task-history table in a PostgreSQL database given as a URL."""

    local = False  # a server across the network: resolvers over it keep the chain's timeout

    def __init__(self, url: str) -> None:
        self._url = url
        self.path = redacted(url)
        self._lock = threading.Lock()
        self._pg = self._connect()
        with self._lock, self._pg.transaction():
            # Several runs may open a fresh database at once: one creates the table.
            self._pg.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATE,))
            self._pg.execute(_sql.schema("postgresql"))
            for column in _sql.ADDED_COLUMNS:
                self._pg.execute(
                    _sql.add_column(column, "postgresql").replace(
                        "ADD COLUMN", "ADD COLUMN IF NOT EXISTS"
                    )
                )

    def _connect(self) -> Any:
        import psycopg  # the optional extra: only a PostgreSQL history needs it

        try:
            return psycopg.connect(self._url, autocommit=True, connect_timeout=10)
        except psycopg.Error as exc:
            # A server that is down or restarting is the normal case of a shared history
            # (issue 34), not bad input: a HistoryError, so a run goes on and records its
            # tasks once the server is back; a command that needs the rows fails (exit 1).
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise HistoryError(
                f"history: {self.path!r} could not be reached; expected a reachable "
                f"PostgreSQL ({masked(reason, self._url)})"
            ) from None

    def _call(self, work: Callable[[Any], _T]) -> _T:
        """Run ``work(connection)``; after a dropped connection, connect again once."""
        import psycopg

        with self._lock:
            for attempt in (1, 2):
                try:
                    return work(self._pg)
                except psycopg.OperationalError as exc:
                    if attempt == 2 or (not self._pg.closed and not _dropped(exc)):
                        raise HistoryError(
                            f"history {self.path}: {masked(str(exc), self._url)}"
                        ) from None
                    self._pg = self._connect()
                except psycopg.Error as exc:
                    raise HistoryError(
                        f"history {self.path}: {masked(str(exc), self._url)}"
                    ) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._call(lambda pg: pg.execute(query, _sql.storable(params)).fetchall())

    def record(self, records: Iterable[TaskRecord]) -> int:
        """Store finished attempts in one transaction (a replayed one replaces itself)."""
        rows = [_sql.row(r) for r in records]

        def write(pg: Any) -> int:
            with pg.transaction(), pg.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITERS,))
                cursor.executemany(_UPSERT, rows)
            return len(rows)

        return self._call(write)

    def stats(self, process: str) -> ProcessStats | None:
        """The process's history, or ``None`` if it never finished an attempt here."""
        (row,) = self._rows(_sql.STATS.format(param="%s"), (process,))
        if not row[-1]:
            return None
        return ProcessStats(process, *row[:-1])

    def attempts(self, after: int = 0, limit: int = 100_000) -> tuple[int, list[TaskRecord]]:
        """Attempts stored after cursor ``after`` (oldest first) and the cursor to pass next."""
        rows = self._rows(
            f"SELECT seq, {_sql.COLUMNS} FROM task_history WHERE seq > %s ORDER BY seq LIMIT %s",
            (after, limit),
        )
        if not rows:
            return after, []
        return int(rows[-1][0]), [TaskRecord(*row[1:]) for row in rows]

    def records(self, run_ids: Sequence[str] = (), since: float | None = None) -> list[TaskRecord]:
        """Every attempt of the runs named (all when none), finished at or after ``since``."""
        where, params = _sql.filters(run_ids, since, "%s")
        rows = self._rows(f"SELECT {_sql.COLUMNS} FROM task_history{where} ORDER BY seq", params)
        return [TaskRecord(*row) for row in rows]

    def cpu_use(self) -> list[CpuUse]:
        """Per process with successful runs that report both, the cores reserved and used."""
        return [CpuUse(*row) for row in self._rows(_sql.CPU_USE)]

    def processes(self) -> list[str]:
        """Every process with at least one successful attempt, sorted."""
        return [r[0] for r in self._rows(_sql.PROCESSES)]

    def count(self) -> int:
        """How many attempts are stored."""
        ((total,),) = self._rows(_sql.COUNT)
        return int(total)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._pg.close()


def _dropped(exc: Exception) -> bool:
    text = str(exc).lower()
    return any(
        sign in text
        for sign in ("terminating connection", "server closed", "connection", "consuming input")
    )
