"""The SQL both stores share: one table, the same queries, a placeholder apart.

SQLite and PostgreSQL differ only in column types, the cursor column (SQLite's ``rowid``,
PostgreSQL's ``seq`` sequence) and the parameter placeholder (``?`` / ``%s``).

Beside the attempts: ``task_summary`` (one row per process and per process, cpus and
container: :mod:`._tally`) and ``task_totals`` (one row; its ``version`` says which
layout the file has). Every query a run, the report or a resolve makes is indexed: by run
id (the key), by process and stratum, newest first (the right-sizer's window), by finish
time (``--since``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from ..bounds import MAX_BYTES, MAX_CPUS, MAX_SECONDS
from ._records import TaskRecord
from ._tally import SUMMARY_COLUMNS

__all__ = [
    "ADDED_COLUMNS",
    "COLUMNS",
    "CURSOR",
    "FIELDS",
    "FLAG_INDEX",
    "KEY",
    "MEASURED",
    "SUMMARY_COLUMNS",
    "VERSION",
    "WINDOWS",
    "add_column",
    "declared",
    "filters",
    "row",
    "schema",
    "storable",
    "stratum_clauses",
    "summary_schema",
    "window",
]

FIELDS = tuple(a.name for a in attrs.fields(TaskRecord))

COLUMNS = ", ".join(FIELDS)
KEY = ("run_id", "task_id", "attempt")
FLAG_INDEX = tuple(FIELDS.index(flag) for flag in ("succeeded", "out_of_memory", "time_limit"))


def storable(values: Sequence[Any]) -> tuple[Any, ...]:
    """``values`` with each text made valid UTF-8, which both databases require.

    A name from a command line can hold lone surrogates (Python's surrogateescape form of
    argv bytes that are not UTF-8, e.g. ``seqera run --name $'\\xff'``); encoding one
    raises UnicodeEncodeError inside the driver. Each becomes ``?``, the same way on
    writing and on reading, so the name still finds its own rows."""
    return tuple(
        v.encode("utf-8", "replace").decode("utf-8")
        if isinstance(v, str) and not v.isascii()
        else v
        for v in values
    )


def row(record: TaskRecord) -> tuple[Any, ...]:
    """The record's column values, in :data:`FIELDS` order, ready to store."""
    return storable([getattr(record, f) for f in FIELDS])


# (column, SQLite type, PostgreSQL type) for every column; the key and flags are NOT NULL.
_TYPES = {
    "run_id": ("TEXT NOT NULL", "TEXT NOT NULL"),
    "task_id": ("TEXT NOT NULL", "TEXT NOT NULL"),
    "attempt": ("INTEGER NOT NULL", "INTEGER NOT NULL"),
    "process": ("TEXT NOT NULL", "TEXT NOT NULL"),
    "engine": ("TEXT NOT NULL DEFAULT ''", "TEXT NOT NULL DEFAULT ''"),
    "succeeded": ("INTEGER NOT NULL", "BOOLEAN NOT NULL"),
    "exit_code": ("INTEGER", "INTEGER"),
    "out_of_memory": ("INTEGER NOT NULL DEFAULT 0", "BOOLEAN NOT NULL DEFAULT FALSE"),
    "time_limit": ("INTEGER NOT NULL DEFAULT 0", "BOOLEAN NOT NULL DEFAULT FALSE"),
    "cpus": ("REAL", "DOUBLE PRECISION"),
    "memory": ("INTEGER", "BIGINT"),
    "time": ("INTEGER", "BIGINT"),
    "peak_memory": ("INTEGER", "BIGINT"),
    "cpu_percent": ("REAL", "DOUBLE PRECISION"),
    "realtime": ("REAL", "DOUBLE PRECISION"),
    "input_bytes": ("INTEGER", "BIGINT"),
    "container": ("TEXT", "TEXT"),
    "finished": ("REAL", "DOUBLE PRECISION"),
    "cause": ("TEXT", "TEXT"),
    "cpu_time": ("REAL", "DOUBLE PRECISION"),
    "backend": ("TEXT NOT NULL DEFAULT ''", "TEXT NOT NULL DEFAULT ''"),
    "route": ("TEXT NOT NULL DEFAULT ''", "TEXT NOT NULL DEFAULT ''"),
}
assert set(_TYPES) == set(FIELDS), "every TaskRecord field is a column"
# Columns added after the first release: an older table gains them when opened.
ADDED_COLUMNS = ("cause", "cpu_time", "backend", "route")


# The layout: 1 the attempts alone; 2 the summaries, the totals, the replay flag and the
# indexes by stratum and finish time (an older file is brought up to it when opened).
VERSION = 2
# The column that numbers the attempts in the order they were stored.
CURSOR = {"sqlite": "rowid", "postgresql": "seq"}


def schema(dialect: str) -> str:
    """``CREATE TABLE``/``INDEX`` statements of the attempts' table for ``sqlite`` or
    ``postgresql`` (version 1's, which every later version keeps)."""
    index = 0 if dialect == "sqlite" else 1
    seq = "" if dialect == "sqlite" else "    seq BIGSERIAL NOT NULL,\n"
    columns = ",\n".join(f"    {name} {types[index]}" for name, types in _TYPES.items())
    text = (
        f"CREATE TABLE IF NOT EXISTS task_history (\n{seq}{columns},\n"
        f"    PRIMARY KEY ({', '.join(KEY)})\n);\n"
        "CREATE INDEX IF NOT EXISTS task_history_process ON task_history (process, succeeded);\n"
    )
    if dialect != "sqlite":
        text += "CREATE INDEX IF NOT EXISTS task_history_seq ON task_history (seq);\n"
    return text


def summary_schema(dialect: str) -> list[str]:
    """The statements that bring a version-1 table to :data:`VERSION`: the summaries, the
    totals, the replay flag, and the indexes a run, a resolve and the report read by.

    SQLite's indexes end in the ``rowid`` on their own, so (process, succeeded) already
    reads a process's attempts newest first; PostgreSQL's name ``seq``.
    """
    lite = dialect == "sqlite"
    real, big = ("REAL", "INTEGER") if lite else ("DOUBLE PRECISION", "BIGINT")
    seq = "" if lite else ", seq"
    types = {"process": "TEXT NOT NULL", "stratum": "TEXT NOT NULL", "cpus": real,
             "container": "TEXT", "first_seq": big, "last_seq": big, "attempts": big,
             "succeeded": big, "peak_memory": big, "out_of_memory": big,
             "time_limit": big, "failed_memory": big, "failed_time": big,
             "cpu_runs": big, "memory_runs": big, "time_runs": big}  # fmt: skip
    columns = ", ".join(f"{c} {types.get(c, real)}" for c in SUMMARY_COLUMNS)
    flag = "INTEGER NOT NULL DEFAULT 0" if lite else "BOOLEAN NOT NULL DEFAULT FALSE"
    return [
        f"CREATE TABLE IF NOT EXISTS task_summary ({columns}, PRIMARY KEY (process, stratum))",
        f"CREATE TABLE IF NOT EXISTS task_totals (id INTEGER PRIMARY KEY, version {big}, "
        f"last_seq {big}, attempts {big}, memory_runs {big}, memory_total {real}, "
        f"time_runs {big}, time_total {real})",
        f"ALTER TABLE task_history ADD COLUMN {'' if lite else 'IF NOT EXISTS '}replay {flag}",
        "CREATE INDEX IF NOT EXISTS task_history_stratum "
        f"ON task_history (process, cpus, container, succeeded{seq})",
        "CREATE INDEX IF NOT EXISTS task_history_finished ON task_history (finished)",
        *_WINDOW_INDEX[dialect],
    ]


# SQLite's (process, succeeded) index ends in the rowid already; PostgreSQL's needs seq.
_WINDOW_INDEX = {
    "sqlite": [],
    "postgresql": [
        "CREATE INDEX IF NOT EXISTS task_history_window ON task_history (process, succeeded, seq)"
    ],
}


def add_column(name: str, dialect: str) -> str:
    """The statement that adds a later column to an older table."""
    return f"ALTER TABLE task_history ADD COLUMN {name} {_TYPES[name][dialect != 'sqlite']}"


def _measured(column: str, maximum: int) -> str:
    # A value outside the contract's bounds (an infinity, a 1e308 an older writer kept)
    # reads as not measured (TaskRecord's converters): it is no run of the window.
    return f"{column} > 0 AND {column} <= {maximum}"


# The right-sizer's four windows of one process or stratum: successful runs that used
# memory, that took time, and attempts killed for memory or for time at a known
# allocation (the conditions of ``PredictiveResolver._learn``).
WINDOWS = {
    "memory": f"succeeded = TRUE AND {_measured('peak_memory', MAX_BYTES)}",
    "time": f"succeeded = TRUE AND {_measured('realtime', MAX_SECONDS)}",
    "out_of_memory": f"succeeded = FALSE AND out_of_memory = TRUE AND "
    f"{_measured('memory', MAX_BYTES)}",
    "time_limit": f"succeeded = FALSE AND time_limit = TRUE AND {_measured('time', MAX_SECONDS)}",
}


# The memory and the time windows together: successful runs that count in either. Its
# query hands back, before the columns, whether each row counts in the memory window and
# in the time window (the database's own reading of the same conditions).
MEASURED = (f"succeeded = TRUE AND ({_measured('peak_memory', MAX_BYTES)} OR "
            f"{_measured('realtime', MAX_SECONDS)})")  # fmt: skip


def stratum_clauses(
    cpus: float | None, container: str | None, param: str, params: list[Any]
) -> list[str]:
    """The WHERE clauses of one stratum (its stored cpus and container; their values go to
    ``params``). IS NULL written out: PostgreSQL's index serves it, not IS NOT DISTINCT
    FROM."""
    clauses = []
    for column, value in (("cpus", cpus), ("container", container)):
        if value is None:
            clauses.append(f"{column} IS NULL")
        else:
            clauses.append(f"{column} = {param}")
            params.append(value)
    return clauses


def window(
    kind: str, cpus: float | None, container: str | None, whole: bool, dialect: str
) -> tuple[str, list[Any]]:
    """One window's query, newest first, and the stratum's parameters. Its parameters:
    the process, the stratum's, the last number to read, and how many rows. ``kind`` is
    one of :data:`WINDOWS`, or ``measured`` (:data:`MEASURED`: each row led by its
    memory and time flags).

    ``IS NULL`` is written out for a missing cpus or container: PostgreSQL's index serves
    ``= value`` and ``IS NULL`` but not ``IS NOT DISTINCT FROM``."""
    param = "?" if dialect == "sqlite" else "%s"
    cursor = CURSOR[dialect]
    columns = COLUMNS
    if kind == "measured":
        columns = f"({WINDOWS['memory']}), ({WINDOWS['time']}), {COLUMNS}"
    clauses = [f"process = {param}"]
    params: list[Any] = []
    if not whole:
        clauses += stratum_clauses(cpus, container, param, params)
    clauses += [MEASURED if kind == "measured" else WINDOWS[kind], f"{cursor} <= {param}"]
    query = (f"SELECT {columns} FROM task_history WHERE {' AND '.join(clauses)} "
             f"ORDER BY {cursor} DESC LIMIT {param}")  # fmt: skip
    return query, params


def _given(column: str, maximum: int) -> str:
    # what TaskRecord's converters keep of a stored value (bounds.within: 0 to maximum)
    return f"({column} >= 0 AND {column} <= {maximum})"


def declared(succeeded: bool, dialect: str) -> str:
    """The query of a process's earliest first attempt, among its successful (or failed)
    ones, that was given cpus, memory or time; its parameter: the process. By the index
    that a window reads by, oldest first: it stops at the first such row."""
    cursor = CURSOR[dialect]
    given = " OR ".join(_given(c, m) for c, m in (("cpus", MAX_CPUS), ("memory", MAX_BYTES),
                                                   ("time", MAX_SECONDS)))  # fmt: skip
    param = "?" if dialect == "sqlite" else "%s"
    return (f"SELECT {cursor}, {COLUMNS} FROM task_history WHERE process = {param} AND "
            f"succeeded = {str(succeeded).upper()} AND attempt = 1 AND ({given}) "
            f"ORDER BY {cursor} LIMIT 1")  # fmt: skip


def filters(run_ids: Sequence[str], since: float | None, param: str) -> tuple[str, list[Any]]:
    """A ``WHERE`` clause (or nothing) for :meth:`History.records` and its parameters."""
    clauses: list[str] = []
    params: list[Any] = []
    if run_ids:
        clauses.append(f"run_id IN ({', '.join(param for _ in run_ids)})")
        params.extend(run_ids)
    if since is not None:
        clauses.append(f"finished >= {param}")
        params.append(since)
    return ("" if not clauses else " WHERE " + " AND ".join(clauses)), params
