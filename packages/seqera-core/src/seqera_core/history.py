"""What finished tasks used: one SQLite table every engine writes and every resolver reads.

A row is one attempt of one task: the process it ran, what it asked for, what it used
(peak resident memory, cpu as percent of one core, wall time, input bytes) and how it
ended. Failed attempts are kept, flagged ``out_of_memory``/``time_limit``, and never count
as a peak: a task killed at its limit says only that the limit was too small.

``open_history("sqlite:///path/history.db")`` or a plain path; ``":memory:"`` for tests.
The store is safe to share between threads of one process.
"""

from __future__ import annotations

import math
import sqlite3
import threading
import time
from collections.abc import Iterable
from pathlib import Path

import attrs
from attrs import frozen

from .backends.base import JobState, JobStatus
from .errors import ResourceError
from .models import ResourceRequest

__all__ = ["CpuUse", "History", "ProcessStats", "TaskRecord", "finished_record", "open_history"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS task_history (
    run_id TEXT NOT NULL,
    task_id TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    process TEXT NOT NULL,
    engine TEXT NOT NULL DEFAULT '',
    succeeded INTEGER NOT NULL,
    exit_code INTEGER,
    out_of_memory INTEGER NOT NULL DEFAULT 0,
    time_limit INTEGER NOT NULL DEFAULT 0,
    cpus REAL,
    memory INTEGER,
    time INTEGER,
    peak_memory INTEGER,
    cpu_percent REAL,
    realtime REAL,
    input_bytes INTEGER,
    container TEXT,
    finished REAL,
    PRIMARY KEY (run_id, task_id, attempt)
);
CREATE INDEX IF NOT EXISTS task_history_process ON task_history (process, succeeded);
"""


@frozen
class TaskRecord:
    """One finished attempt: requested ``cpus``/``memory`` (bytes)/``time`` (s), and usage."""

    run_id: str
    task_id: str
    process: str
    succeeded: bool
    attempt: int = 1
    engine: str = ""
    exit_code: int | None = None
    out_of_memory: bool = False
    time_limit: bool = False
    cpus: float | None = None
    memory: int | None = None
    time: int | None = None
    peak_memory: int | None = None
    cpu_percent: float | None = None
    realtime: float | None = None
    input_bytes: int | None = None
    container: str | None = None
    finished: float | None = None


@frozen
class ProcessStats:
    """A process's history: the largest usage over successful attempts, and its failures."""

    process: str
    runs: int
    peak_memory: int | None
    cpu_percent: float | None
    realtime: float | None
    out_of_memory: int
    time_limit: int
    # The largest allocation an out-of-memory (time-limit) attempt was killed at.
    failed_memory: int | None
    failed_time: int | None


@frozen
class CpuUse:
    """Cores a process reserved and the most it kept busy (``%cpu`` / 100) over ``runs``."""

    process: str
    runs: int
    reserved: float
    busy: float

    @property
    def unused(self) -> float:
        """Cores reserved that no run ever used (whole cores; 0 when all were)."""
        return max(0.0, self.reserved - max(1.0, math.ceil(self.busy)))


_FIELDS = tuple(a.name for a in attrs.fields(TaskRecord))
# ProcessStats in one query, the same on SQLite and PostgreSQL but for the placeholder.
_STATS_SQL = """SELECT COUNT(*) FILTER (WHERE succeeded),
    MAX(peak_memory) FILTER (WHERE succeeded), MAX(cpu_percent) FILTER (WHERE succeeded),
    MAX(realtime) FILTER (WHERE succeeded), COUNT(*) FILTER (WHERE out_of_memory),
    COUNT(*) FILTER (WHERE time_limit), MAX(memory) FILTER (WHERE out_of_memory),
    MAX(time) FILTER (WHERE time_limit), COUNT(*)
FROM task_history WHERE process = {param}"""


_FLAGS = ("succeeded", "out_of_memory", "time_limit")


_FLAG_INDEX = tuple(_FIELDS.index(flag) for flag in _FLAGS)


def _record(row: tuple[object, ...]) -> TaskRecord:
    values = list(row)
    for index in _FLAG_INDEX:  # SQLite hands booleans back as 0/1
        values[index] = bool(values[index])
    return TaskRecord(*values)  # type: ignore[arg-type]


class History:
    """The task-history table in one SQLite database."""

    # answers from this machine (SQLite): readers need no timeout against a network
    local = True

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)

    def record(self, records: Iterable[TaskRecord]) -> int:
        """Store finished attempts (a replayed one replaces itself); returns how many."""
        rows = [tuple(getattr(r, f) for f in _FIELDS) for r in records]
        placeholders = ", ".join("?" for _ in _FIELDS)
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(
                    f"INSERT OR REPLACE INTO task_history ({', '.join(_FIELDS)}) "
                    f"VALUES ({placeholders})",
                    rows,
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
        return len(rows)

    def stats(self, process: str) -> ProcessStats | None:
        """The process's history, or ``None`` if it never finished an attempt here."""
        with self._lock:
            row = self._db.execute(
                _STATS_SQL.format(param="?"),
                (process,),
            ).fetchone()
        if not row[-1]:
            return None
        return ProcessStats(process, *row[:-1])

    def attempts(self, after: int = 0, limit: int = 100_000) -> tuple[int, list[TaskRecord]]:
        """Attempts stored after cursor ``after`` (oldest first) and the cursor to pass next.

        A learner reads the whole table once with ``after=0`` and then only what is new;
        a replayed attempt comes back once more, as a new row.
        """
        with self._lock:
            rows = self._db.execute(
                f"SELECT rowid, {', '.join(_FIELDS)} FROM task_history "
                "WHERE rowid > ? ORDER BY rowid LIMIT ?",
                (after, limit),
            ).fetchall()
        if not rows:
            return after, []
        records = [_record(row[1:]) for row in rows]
        return int(rows[-1][0]), records

    def cpu_use(self) -> list[CpuUse]:
        """Per process with successful runs that report both, the cores reserved and used."""
        with self._lock:
            rows = self._db.execute(
                """SELECT process, COUNT(*), MAX(cpus), MAX(cpu_percent) / 100.0
                   FROM task_history
                   WHERE succeeded AND cpus IS NOT NULL AND cpu_percent IS NOT NULL
                   GROUP BY process ORDER BY process"""
            ).fetchall()
        return [CpuUse(*row) for row in rows]

    def processes(self) -> list[str]:
        """Every process with at least one successful attempt, sorted."""
        with self._lock:
            rows = self._db.execute(
                "SELECT DISTINCT process FROM task_history WHERE succeeded ORDER BY process"
            ).fetchall()
        return [r[0] for r in rows]

    def count(self) -> int:
        """How many attempts are stored."""
        with self._lock:
            (total,) = self._db.execute("SELECT COUNT(*) FROM task_history").fetchone()
        return int(total)

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()


def finished_record(
    request: ResourceRequest, status: JobStatus, *, run_id: str, engine: str
) -> TaskRecord:
    """The history row of a finished job: what it asked for and what the backend measured."""
    return TaskRecord(
        run_id=run_id,
        task_id=status.handle.native_id,
        process=request.process or "task",
        succeeded=status.state is JobState.SUCCEEDED,
        attempt=request.attempt,
        engine=engine,
        exit_code=status.exit_code,
        out_of_memory=status.out_of_memory,
        time_limit=status.time_limit,
        cpus=request.cpus,
        memory=request.memory,
        time=request.time,
        peak_memory=status.peak_memory_bytes,
        realtime=status.wall_seconds,
        input_bytes=request.input_bytes,
        container=request.container,
        finished=time.time(),
    )


def open_history(location: str | Path) -> History:
    """A history at a path, ``sqlite:///absolute/path``, ``sqlite:relative``, ``:memory:``,
    or a shared one at ``postgresql://user@host:port/database`` (the ``postgresql`` extra)."""
    text = str(location)
    if text.startswith(("postgresql://", "postgres://")):
        try:
            from ._history_pg import PostgresHistory
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise ResourceError("history", text, f"psycopg installed ({exc})") from None
        return PostgresHistory(text)
    if text.startswith("sqlite:"):
        text = text.removeprefix("sqlite:").removeprefix("//")
        text = text or ":memory:"
    elif "://" in text:
        raise ResourceError(
            "history", text, "a file path, an sqlite:///path or a postgresql:// URL"
        )
    return History(text)
