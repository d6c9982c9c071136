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

import math
import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from ..errors import HistoryError, ResourceError
from . import _sql
from ._store import Execute, SummaryStore

__all__ = ["SqliteHistory"]

# SQLite's result codes for a database another connection holds (sqlite3.h: SQLITE_BUSY,
# SQLITE_LOCKED): a wait that ran out, not a file that is not a database.
_HELD = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
_EXPECTED = "an SQLite database file (or a new file's path), sqlite:///path or postgresql:// URL"
_T = TypeVar("_T")
_INSERT = (f"INSERT OR REPLACE INTO task_history ({_sql.COLUMNS}, replay) "
           f"VALUES ({', '.join('?' for _ in _sql.FIELDS)}, ?)")  # fmt: skip


def _log(value: float | None) -> float | None:
    return None if value is None or value <= 0 else math.log(value)


def _math(db: sqlite3.Connection) -> None:
    """``ln`` for an older table's upgrade (:mod:`._upgrade`): SQLite's own where it was
    built with its math functions (3.35+, SQLITE_ENABLE_MATH_FUNCTIONS), else Python's."""
    try:
        db.execute("SELECT ln(1)")
    except sqlite3.OperationalError:
        db.create_function("ln", 1, _log, deterministic=True)


class SqliteHistory(SummaryStore):
    """The task-history table in one SQLite database file."""

    # answers from this machine: readers need no timeout against a network
    local = True
    _dialect = "sqlite"

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
            _math(self._db)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_sql.schema("sqlite"))
            present = {row[1] for row in self._db.execute("PRAGMA table_info(task_history)")}
            for column in _sql.ADDED_COLUMNS:
                if column not in present:
                    self._db.execute(_sql.add_column(column, "sqlite"))
            if "replay" not in present or not self._current():
                self._transaction(self._layout)
        except (sqlite3.DatabaseError, HistoryError) as exc:
            self._db.close()
            # the layout's upgrade runs in a write transaction, which says HistoryError
            cause = exc.__cause__ if isinstance(exc, HistoryError) else exc
            if getattr(cause, "sqlite_errorcode", None) in _HELD:
                raise HistoryError(
                    f"history {self.path}: still locked by another process after "
                    f"{timeout:g} s ({cause})"
                ) from None
            raise ResourceError("history", self.path, f"{_EXPECTED} ({cause})") from None

    def _current(self) -> bool:
        try:
            found = self._db.execute("SELECT version FROM task_totals WHERE id = 1").fetchall()
        except sqlite3.OperationalError:  # no such table: version 1
            return False
        return bool(found) and found[0][0] >= _sql.VERSION

    def _layout(self, execute: Execute) -> None:
        present = {row[1] for row in self._db.execute("PRAGMA table_info(task_history)")}
        for statement in _sql.summary_schema("sqlite"):
            if "ADD COLUMN" in statement and "replay" in present:
                continue  # another process brought it up to date meanwhile
            execute(statement, ())
        self._upgrade(execute, rebuild="replay" not in present)

    def _rows(self, query: str, params: Sequence[Any] = ()) -> list[Any]:
        try:
            with self._lock:
                return self._db.execute(query, _sql.storable(params)).fetchall()
        except sqlite3.Error as exc:
            raise HistoryError(f"history {self.path}: {exc}") from exc

    def _run(self, query: str, params: Sequence[Any]) -> list[Any]:
        return self._db.execute(query, _sql.storable(params)).fetchall()

    def _transaction(self, work: Callable[[Execute], _T]) -> _T:
        """``work`` in one write transaction; another writer waits up to ``timeout``."""
        try:
            with self._lock:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    result = work(self._run)
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
                return result
        except sqlite3.Error as exc:
            raise HistoryError(f"history {self.path}: {exc}") from exc

    def _snapshot(self, work: Callable[[Execute], _T]) -> _T:
        """Reads in one transaction: WAL gives them one state of the file."""
        try:
            with self._lock:
                self._db.execute("BEGIN")
                try:
                    return work(self._run)
                finally:
                    self._db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise HistoryError(f"history {self.path}: {exc}") from exc

    def _insert(
        self, execute: Execute, rows: Sequence[tuple[Any, ...]], replays: Sequence[bool]
    ) -> list[int]:
        seqs = []
        for row, replay in zip(rows, replays, strict=True):
            cursor = self._db.execute(_INSERT, (*row, int(replay)))
            assert cursor.lastrowid is not None
            seqs.append(cursor.lastrowid)
        return seqs

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
