"""The task history on PostgreSQL: one table a team shares, written by many runs at once.

Same rows and answers as the SQLite store (`History`); a ``seq`` column (a sequence)
is the cursor ``attempts()`` reads from, and a replayed attempt takes a new one. Writers
take turns (a transaction-scoped advisory lock), so numbers commit in order: otherwise
a reader past number N would never see a row numbered below N that committed later.
Needs the ``postgresql`` extra (psycopg).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .errors import ResourceError
from .history import _FIELDS, _STATS_SQL, CpuUse, History, ProcessStats, TaskRecord

__all__ = ["PostgresHistory"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS task_history (
    seq BIGSERIAL NOT NULL,
    run_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    process TEXT NOT NULL,
    engine TEXT NOT NULL DEFAULT '',
    succeeded BOOLEAN NOT NULL,
    exit_code INTEGER,
    out_of_memory BOOLEAN NOT NULL DEFAULT FALSE,
    time_limit BOOLEAN NOT NULL DEFAULT FALSE,
    cpus DOUBLE PRECISION,
    memory BIGINT,
    time BIGINT,
    peak_memory BIGINT,
    cpu_percent DOUBLE PRECISION,
    realtime DOUBLE PRECISION,
    input_bytes BIGINT,
    container TEXT,
    finished DOUBLE PRECISION,
    PRIMARY KEY (run_id, task_id, attempt)
);
CREATE INDEX IF NOT EXISTS task_history_process ON task_history (process, succeeded);
CREATE INDEX IF NOT EXISTS task_history_seq ON task_history (seq);
"""

# Advisory lock keys: creating the table, and writing rows (one writer at a time).
_CREATE, _WRITERS = 7011, 7012
_COLUMNS = ", ".join(_FIELDS)
_KEY = ("run_id", "task_id", "attempt")
_UPSERT = (
    f"INSERT INTO task_history ({_COLUMNS}) VALUES ({', '.join('%s' for _ in _FIELDS)}) "
    "ON CONFLICT (run_id, task_id, attempt) DO UPDATE SET "
    + ", ".join(f"{f} = EXCLUDED.{f}" for f in _FIELDS if f not in _KEY)
    + ", seq = nextval(pg_get_serial_sequence('task_history', 'seq'))"
)


def _redacted(url: str) -> str:
    """``url`` with any password replaced by ``***``, fit for an error message."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = f"{parts.username}:***@" if parts.username else ":***@"
    return urlunsplit(parts._replace(netloc=user + parts.netloc.rpartition("@")[2]))


class PostgresHistory(History):
    """The task-history table in a PostgreSQL database given as a URL."""

    local = False  # a server across the network: resolvers over it keep the chain's timeout

    def __init__(self, url: str) -> None:
        import psycopg  # the optional extra: only a PostgreSQL history needs it

        self.path = url
        try:
            self._pg = psycopg.connect(url, autocommit=True, connect_timeout=10)
        except psycopg.OperationalError as exc:
            reason = str(exc).strip().splitlines()[0]
            raise ResourceError(
                "history", _redacted(url), f"a reachable PostgreSQL ({reason})"
            ) from None
        self._lock = threading.Lock()
        with self._lock, self._pg.transaction():
            # Several runs may open a fresh database at once: one creates the table.
            self._pg.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATE,))
            self._pg.execute(_SCHEMA)

    def _rows(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._pg.execute(query, params).fetchall()

    def record(self, records: Iterable[TaskRecord]) -> int:
        """Store finished attempts in one transaction (a replayed one replaces itself)."""
        rows = [tuple(getattr(r, f) for f in _FIELDS) for r in records]
        with self._lock, self._pg.transaction(), self._pg.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITERS,))
            cursor.executemany(_UPSERT, rows)
        return len(rows)

    def stats(self, process: str) -> ProcessStats | None:
        """The process's history, or ``None`` if it never finished an attempt here."""
        (row,) = self._rows(
            _STATS_SQL.format(param="%s"),
            (process,),
        )
        if not row[-1]:
            return None
        return ProcessStats(process, *row[:-1])

    def attempts(self, after: int = 0, limit: int = 100_000) -> tuple[int, list[TaskRecord]]:
        """Attempts stored after cursor ``after`` (oldest first) and the cursor to pass next."""
        rows = self._rows(
            f"SELECT seq, {_COLUMNS} FROM task_history WHERE seq > %s ORDER BY seq LIMIT %s",
            (after, limit),
        )
        if not rows:
            return after, []
        return int(rows[-1][0]), [TaskRecord(*row[1:]) for row in rows]

    def cpu_use(self) -> list[CpuUse]:
        """Per process with successful runs that report both, the cores reserved and used."""
        rows = self._rows(
            """SELECT process, COUNT(*), MAX(cpus), MAX(cpu_percent) / 100.0
               FROM task_history
               WHERE succeeded AND cpus IS NOT NULL AND cpu_percent IS NOT NULL
               GROUP BY process ORDER BY process"""
        )
        return [CpuUse(*row) for row in rows]

    def processes(self) -> list[str]:
        """Every process with at least one successful attempt, sorted."""
        rows = self._rows(
            "SELECT DISTINCT process FROM task_history WHERE succeeded ORDER BY process"
        )
        return [r[0] for r in rows]

    def count(self) -> int:
        """How many attempts are stored."""
        ((total,),) = self._rows("SELECT COUNT(*) FROM task_history")
        return int(total)

    def close(self) -> None:
        """Close the connection."""
        with self._lock:
            self._pg.close()
