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
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from ..errors import HistoryError
from ..redaction import masked, redacted
from . import _sql
from ._records import TaskRecord
from ._store import Execute, SummaryStore

__all__ = ["PostgresHistory"]

# Advisory lock keys: creating the table, and writing rows (one writer at a time).
_CREATE, _WRITERS = 7011, 7012
_UPSERT = (
    f"INSERT INTO task_history ({_sql.COLUMNS}, replay) "
    f"VALUES ({', '.join('%s' for _ in _sql.FIELDS)}, %s) "
    "ON CONFLICT (run_id, task_id, attempt) DO UPDATE SET "
    + ", ".join(f"{f} = EXCLUDED.{f}" for f in _sql.FIELDS if f not in _sql.KEY)
    + ", replay = TRUE, seq = nextval(pg_get_serial_sequence('task_history', 'seq')) "
    "RETURNING seq"
)
_T = TypeVar("_T")


class PostgresHistory(SummaryStore):
    """The task-history table in a PostgreSQL database given as a URL."""

    local = False  # a server across the network: resolvers over it keep the chain's timeout
    _dialect = "postgresql"

    def __init__(self, url: str) -> None:
        self._url = url
        self.path = redacted(url)
        self._lock = threading.Lock()
        self._pg = self._connect()
        try:
            # A session ended under the check (pg_ctl stop -m fast, or a backend
            # terminated) is connected again once, as for any call; a server that stays
            # down, or any other error, is a HistoryError a run outlives.
            self._call(self._check_tables)
        except HistoryError:
            self._pg.close()
            raise

    def _check_tables(self, pg: Any) -> None:
        """Create the tables, or bring an older table's summaries up to date."""
        with pg.transaction():
            # Several runs may open a fresh database at once: one creates the tables. It
            # waits for writers first (the lock they take): DDL holding a table lock that
            # a writer waits for while it waits for that writer would deadlock.
            pg.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATE,))
            pg.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITERS,))
            pg.execute(_sql.schema("postgresql"))
            for column in _sql.ADDED_COLUMNS:
                pg.execute(
                    _sql.add_column(column, "postgresql").replace(
                        "ADD COLUMN", "ADD COLUMN IF NOT EXISTS"
                    )
                )
            (replay,) = pg.execute(
                "SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema "
                "= current_schema() AND table_name = 'task_history' AND column_name = 'replay')"
            ).fetchone()
            # ALTER and CREATE INDEX lock the table: only when needed
            if not replay or not self._current(pg):
                for statement in _sql.summary_schema("postgresql"):
                    pg.execute(statement)
                # an older table's summaries, built once (a table without the replay column
                # is one, whatever summaries a dropped one left)
                self._upgrade(self._runner(pg), rebuild=not replay)

    @staticmethod
    def _current(pg: Any) -> bool:
        (exists,) = pg.execute("SELECT to_regclass('task_totals') IS NOT NULL").fetchone()
        if not exists:  # version 1
            return False
        found = pg.execute("SELECT version FROM task_totals WHERE id = 1").fetchall()
        return bool(found) and found[0][0] >= _sql.VERSION

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
                        raise self._failed(exc) from None
                    self._pg = self._connect()
                except psycopg.Error as exc:
                    raise self._failed(exc) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _failed(self, exc: Exception) -> HistoryError:
        """A server's error as the history's, the URL's password masked."""
        return HistoryError(f"history {self.path}: {masked(str(exc), self._url)}")

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self._call(lambda pg: pg.execute(query, _sql.storable(params)).fetchall())

    @staticmethod
    def _runner(pg: Any) -> Execute:
        def execute(query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
            cursor = pg.execute(query, _sql.storable(params))
            return cursor.fetchall() if cursor.description is not None else []

        return execute

    def _transaction(self, work: Callable[[Execute], _T]) -> _T:
        """``work`` in one transaction, writers one at a time (their numbers commit in
        order, and summaries are folded in that order)."""

        def write(pg: Any) -> _T:
            with pg.transaction():
                pg.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITERS,))
                return work(self._runner(pg))

        return self._call(write)

    def _snapshot(self, work: Callable[[Execute], _T]) -> _T:
        """Reads in one REPEATABLE READ transaction: one state of the table."""

        def read(pg: Any) -> _T:
            with pg.transaction():
                pg.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                return work(self._runner(pg))

        return self._call(read)

    def _insert(
        self, execute: Execute, rows: Sequence[tuple[Any, ...]], replays: Sequence[bool]
    ) -> list[int]:
        """Every row in one pipelined round trip, their numbers back."""
        if not rows:
            return []
        with self._pg.cursor() as cursor:
            cursor.executemany(
                _UPSERT,
                [_sql.storable((*row, replay)) for row, replay in zip(rows, replays, strict=True)],
                returning=True,
            )
            seqs = []
            while True:
                seqs.append(int(cursor.fetchone()[0]))
                if not cursor.nextset():
                    break
        return seqs

    def _stored(
        self, execute: Execute, keys: Sequence[tuple[str, str, int]]
    ) -> dict[tuple[str, str, int], TaskRecord]:
        """The attempts already stored under ``keys``, in one query by the key's index."""
        if not keys:
            return {}
        runs, tasks, attempts = (list(column) for column in zip(*keys, strict=True))
        rows = execute(
            f"SELECT {_sql.COLUMNS} FROM task_history WHERE (run_id, task_id, attempt) IN "
            "(SELECT * FROM unnest(%s::text[], %s::text[], %s::integer[]))",
            (runs, tasks, attempts),
        )
        found = {}
        for row in rows:
            record = self._record(row)
            found[(record.run_id, record.task_id, record.attempt)] = record
        return found

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
