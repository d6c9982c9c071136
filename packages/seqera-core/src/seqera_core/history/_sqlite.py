"""The task history in one SQLite database: the embedded default.

``open_history("sqlite:///path/history.db")`` or a plain path; ``":memory:"`` for tests.
The store is safe to share between threads of one process and between processes (WAL);
a writer that finds the database locked waits up to ``timeout`` seconds, then raises
:class:`~seqera_core.errors.HistoryError` (the session keeps the rows and tries again).
Opening waits the same way: a database another process holds locked past ``timeout`` is a
:class:`~seqera_core.errors.HistoryError` too (the run goes on and opens it later), and
:class:`~seqera_core.errors.ResourceError` ("not valid") is kept for what is no database.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from ..errors import HistoryError, ResourceError
from . import _sql
from ._records import CpuUse, ProcessStats, TaskRecord

__all__ = ["SqliteHistory"]

# SQLite's result codes for a database another connection holds (sqlite3.h: SQLITE_BUSY,
# SQLITE_LOCKED): a wait that ran out, not a file that is not a database.
_HELD = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
_EXPECTED = "an SQLite database file (or a new file's path), sqlite:///path or postgresql:// URL"


def _record(row: Sequence[Any]) -> TaskRecord:
    values = list(row)
    for index in _sql.FLAG_INDEX:  # SQLite hands booleans back as 0/1
        values[index] = bool(values[index])
    return TaskRecord(*values)


class SqliteHistory:
    """The task-history table in one SQLite database file."""

    # answers from this machine: readers need no timeout against a network
    local = True

    def __init__(self, path: str | Path, *, timeout: float = 5.0) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            target = Path(self.path)
            try:
                if target.is_dir():  # raises for a name too long (ENAMETOOLONG)
                    raise ResourceError("history", self.path, f"{_EXPECTED}, not a directory")
                target.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ResourceError("history", self.path, f"{_EXPECTED} ({exc})") from None
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(
                self.path, check_same_thread=False, isolation_level=None, timeout=timeout
            )
        except sqlite3.Error as exc:
            raise ResourceError("history", self.path, f"{_EXPECTED} ({exc})") from None
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_sql.schema("sqlite"))
            present = {row[1] for row in self._db.execute("PRAGMA table_info(task_history)")}
            for column in _sql.ADDED_COLUMNS:
                if column not in present:
                    self._db.execute(_sql.add_column(column, "sqlite"))
        except sqlite3.DatabaseError as exc:
            self._db.close()
            if getattr(exc, "sqlite_errorcode", None) in _HELD:
                raise HistoryError(
                    f"history {self.path}: still locked by another process after "
                    f"{timeout:g} s ({exc})"
                ) from None
            raise ResourceError("history", self.path, f"{_EXPECTED} ({exc})") from None

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            with self._lock:
                return self._db.execute(query, _sql.storable(params)).fetchall()
        except sqlite3.Error as exc:
            raise HistoryError(f"history {self.path}: {exc}") from exc

    def record(self, records: Iterable[TaskRecord]) -> int:
        """Store finished attempts in one transaction (a replayed one replaces itself)."""
        rows = [_sql.row(r) for r in records]
        placeholders = ", ".join("?" for _ in _sql.FIELDS)
        try:
            with self._lock:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany(
                        f"INSERT OR REPLACE INTO task_history ({_sql.COLUMNS}) "
                        f"VALUES ({placeholders})",
                        rows,
                    )
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise HistoryError(f"history {self.path}: {exc}") from exc
        return len(rows)

    def stats(self, process: str) -> ProcessStats | None:
        """The process's history, or ``None`` if it never finished an attempt here."""
        (row,) = self._rows(_sql.STATS.format(param="?"), (process,))
        if not row[-1]:
            return None
        return ProcessStats(process, *row[:-1])

    def attempts(self, after: int = 0, limit: int = 100_000) -> tuple[int, list[TaskRecord]]:
        """Attempts stored after cursor ``after`` (oldest first) and the cursor to pass next."""
        rows = self._rows(
            f"SELECT rowid, {_sql.COLUMNS} FROM task_history "
            "WHERE rowid > ? ORDER BY rowid LIMIT ?",
            (after, limit),
        )
        if not rows:
            return after, []
        return int(rows[-1][0]), [_record(row[1:]) for row in rows]

    def records(self, run_ids: Sequence[str] = (), since: float | None = None) -> list[TaskRecord]:
        """Every attempt of the runs named (all when none), finished at or after ``since``."""
        where, params = _sql.filters(run_ids, since, "?")
        rows = self._rows(f"SELECT {_sql.COLUMNS} FROM task_history{where} ORDER BY rowid", params)
        return [_record(row) for row in rows]

    def cpu_use(self) -> list[CpuUse]:
        """Per process with successful runs that report both, the cores reserved and used."""
        return [CpuUse(*row) for row in self._rows(_sql.CPU_USE)]

    def processes(self) -> list[str]:
        """Every process with at least one successful attempt, sorted."""
        return [row[0] for row in self._rows(_sql.PROCESSES)]

    def count(self) -> int:
        """How many attempts are stored."""
        ((total,),) = self._rows(_sql.COUNT)
        return int(total)

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
