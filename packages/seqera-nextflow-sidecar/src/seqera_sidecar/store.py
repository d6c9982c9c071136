"""The dispatcher's SQLite state: runs, tasks, and what each task needs to survive a crash.

A task row is written, with a unique submission ``key`` and the job spec, *before* the
backend sees the job (state ``submitting``), then gets the backend's handle. So after a
``kill -9`` at any moment a restarted sidecar finds every task: with a handle (polled again),
or without one (looked up by its key, or resubmitted when the backend proves it never
got it). The file is created 0600 (specs hold the tasks' environments) and locked, so
two sidecars never drive the same tasks.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from seqera_core import wire
from seqera_core.backends import JobHandle, JobSpec
from seqera_core.errors import UsageError
from seqera_core.models import ResourceRequest

__all__ = [
    "VERSION",
    "forget",
    "handle_from",
    "handle_to",
    "open_state",
    "set_handles",
    "set_state",
    "spec_from",
    "spec_to",
]

VERSION = 2
_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, labels TEXT NOT NULL,
    created REAL NOT NULL, terminated REAL
);
CREATE TABLE IF NOT EXISTS tasks (
    run_id TEXT NOT NULL REFERENCES runs(id), id TEXT NOT NULL, name TEXT NOT NULL,
    process TEXT, state TEXT NOT NULL, exit_code INTEGER, reason TEXT,
    attempts INTEGER NOT NULL DEFAULT 1, resources TEXT NOT NULL, handle TEXT,
    key TEXT NOT NULL UNIQUE, spec TEXT, digest TEXT,
    created REAL NOT NULL, updated REAL NOT NULL,
    PRIMARY KEY (run_id, id)
);
CREATE INDEX IF NOT EXISTS tasks_active ON tasks (state);
"""
# Version 1 (before submission keys): task ids unique on their own, no key, spec, digest.
_FROM_V1 = """
ALTER TABLE tasks RENAME TO tasks_v1;
DROP INDEX IF EXISTS tasks_active;
{schema}
INSERT INTO tasks (run_id, id, name, process, state, exit_code, reason, attempts,
                   resources, handle, key, created, updated)
    SELECT run_id, id, name, process, state, exit_code, reason, attempts, resources,
           handle, 'v1-' || id, created, updated FROM tasks_v1;
DROP TABLE tasks_v1;
"""


def _lock(path: Path) -> int:
    fd = os.open(f"{path}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise UsageError(f"--state: {str(path)!r} is in use by another sidecar") from None
    return fd


@contextlib.contextmanager
def _umask(mask: int) -> Iterator[None]:
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


def open_state(path: Path) -> tuple[sqlite3.Connection, int]:
    """The connection (autocommit, WAL) and the lock's file descriptor; migrates v1."""
    lock = _lock(path)
    # SQLite creates -wal and -shm with the main file's mode: 0600 for all three.
    with _umask(0o077):
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o600))
        db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
    for suffix in ("", "-wal", "-shm"):  # a state file from an older version may be 0644
        with contextlib.suppress(FileNotFoundError):
            os.chmod(f"{path}{suffix}", 0o600)
    version = db.execute("PRAGMA user_version").fetchone()[0]
    columns = {row[1] for row in db.execute("PRAGMA table_info(tasks)")}
    db.execute("BEGIN IMMEDIATE")
    if columns and "key" not in columns:
        for statement in _FROM_V1.format(schema=_SCHEMA).split(";"):
            if statement.strip():
                db.execute(statement)
    else:
        for statement in _SCHEMA.split(";"):
            if statement.strip():
                db.execute(statement)
    if version != VERSION:
        db.execute(f"PRAGMA user_version = {VERSION}")
    db.execute("COMMIT")
    return db, lock


def set_handles(
    db: sqlite3.Connection, keys: Sequence[str], handles: Sequence[JobHandle | None]
) -> None:
    """Each key's handle (None: left as it is); a row still ``submitting`` is ``pending``."""
    now = time.time()
    db.executemany(
        "UPDATE tasks SET handle = ?, state = 'pending', updated = ? "
        "WHERE key = ? AND state = 'submitting'",
        [(handle_to(h), now, k) for k, h in zip(keys, handles, strict=True) if h],
    )


def forget(db: sqlite3.Connection, keys: Sequence[str]) -> None:
    """Delete the rows of ``keys`` that have no handle: their jobs never went out."""
    db.executemany("DELETE FROM tasks WHERE key = ? AND handle IS NULL", [(k,) for k in keys])


def set_state(
    db: sqlite3.Connection, keys: Sequence[str], state: str, reason: str | None = None
) -> None:
    """``state`` for the rows of ``keys``, and ``reason`` unless None."""
    now = time.time()
    if reason is None:
        db.executemany("UPDATE tasks SET state = ?, updated = ? WHERE key = ?",
                       [(state, now, k) for k in keys])  # fmt: skip
    else:
        db.executemany("UPDATE tasks SET state = ?, reason = ?, updated = ? WHERE key = ?",
                       [(state, reason, now, k) for k in keys])  # fmt: skip


def handle_from(text: str | None) -> JobHandle | None:
    """A stored handle."""
    return None if not text else JobHandle(**json.loads(text))


def spec_to(spec: JobSpec) -> str:
    """A job spec as JSON, to submit it again after a crash."""
    document = {
        "name": spec.name, "command": list(spec.command), "workdir": spec.workdir,
        "env": dict(spec.env), "labels": dict(spec.labels), "stdout": spec.stdout,
        "stderr": spec.stderr, "request": wire.unstructure(spec.request), "key": spec.key,
    }  # fmt: skip
    return json.dumps(document)


def spec_from(text: str) -> JobSpec:
    """A job spec stored by :func:`spec_to`."""
    document: dict[str, Any] = json.loads(text)
    document["request"] = wire.structure(document["request"], ResourceRequest)
    document["command"] = tuple(document["command"])
    known = {f.name for f in attrs.fields(JobSpec)}
    return JobSpec(**{k: v for k, v in document.items() if k in known})


def handle_to(handle: JobHandle) -> str:
    """A handle as stored."""
    return json.dumps(attrs.asdict(handle))


def as_mapping(labels: Mapping[str, str]) -> str:
    """Labels as stored."""
    return json.dumps(dict(labels))
