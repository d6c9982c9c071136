"""The SQL both stores share: one table, the same queries, a placeholder apart.

SQLite and PostgreSQL differ only in column types, the cursor column (SQLite's ``rowid``,
PostgreSQL's ``seq`` sequence) and the parameter placeholder (``?`` / ``%s``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from ..bounds import MAX_BYTES, MAX_CPU_PERCENT, MAX_CPUS, MAX_SECONDS
from ._records import TaskRecord

__all__ = [
    "ADDED_COLUMNS",
    "COLUMNS",
    "COUNT",
    "CPU_USE",
    "FIELDS",
    "FLAG_INDEX",
    "KEY",
    "PROCESSES",
    "STATS",
    "add_column",
    "filters",
    "row",
    "schema",
    "storable",
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


def schema(dialect: str) -> str:
    """``CREATE TABLE``/``INDEX`` statements for ``sqlite`` or ``postgresql``."""
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


def add_column(name: str, dialect: str) -> str:
    """The statement that adds a later column to an older table."""
    return f"ALTER TABLE task_history ADD COLUMN {name} {_TYPES[name][dialect != 'sqlite']}"


def _in(column: str, maximum: int) -> str:
    # A value outside the contract's bounds (an infinity, a 1e308 an older writer kept) is
    # left out of an aggregate, as TaskRecord reads it as not measured: the others count.
    return f"(CASE WHEN {column} BETWEEN 0 AND {maximum} THEN {column} END)"


# ProcessStats in one query ({param} is the placeholder).
STATS = f"""SELECT COUNT(*) FILTER (WHERE succeeded),
    MAX({_in("peak_memory", MAX_BYTES)}) FILTER (WHERE succeeded),
    MAX({_in("cpu_percent", MAX_CPU_PERCENT)}) FILTER (WHERE succeeded),
    MAX({_in("realtime", MAX_SECONDS)}) FILTER (WHERE succeeded),
    COUNT(*) FILTER (WHERE out_of_memory), COUNT(*) FILTER (WHERE time_limit),
    MAX({_in("memory", MAX_BYTES)}) FILTER (WHERE out_of_memory),
    MAX({_in("time", MAX_SECONDS)}) FILTER (WHERE time_limit), COUNT(*)
FROM task_history WHERE process = {{param}}"""
CPU_USE = f"""SELECT process, COUNT(*), MAX({_in("cpus", MAX_CPUS)}),
    MAX({_in("cpu_percent", MAX_CPU_PERCENT)}) / 100.0
FROM task_history
WHERE succeeded AND cpus BETWEEN 0 AND {MAX_CPUS}
    AND cpu_percent BETWEEN 0 AND {MAX_CPU_PERCENT}
GROUP BY process ORDER BY process"""
PROCESSES = "SELECT DISTINCT process FROM task_history WHERE succeeded ORDER BY process"
COUNT = "SELECT COUNT(*) FROM task_history"


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
