"""Runs and their tasks: dispatched to a backend, polled together, kept in SQLite.

A run's labels are the baseline every task starts from; a task adds its own delta. Each
task goes through the core's pipeline (resolvers, then labels) before the backend sees
it, and its row keeps the handle, so a restarted sidecar polls the same jobs again. A
task a backend can no longer find after a restart (a local job dies with its parent)
is failed with that reason rather than left running forever.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from seqera_core import wire
from seqera_core.backends import JobHandle, JobSpec, JobState, JobStatus
from seqera_core.errors import ResourceError, SeqeraError, WireError
from seqera_core.labels import string_labels
from seqera_core.models import ResourceRequest
from seqera_core.outcomes import cause, failure_message
from seqera_core.pipeline import prepare
from seqera_core.session import Finished, Session

__all__ = ["Dispatcher", "NotFound"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, labels TEXT NOT NULL,
    created REAL NOT NULL, terminated REAL
);
CREATE TABLE IF NOT EXISTS tasks (
    id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id), name TEXT NOT NULL,
    process TEXT, state TEXT NOT NULL, exit_code INTEGER, reason TEXT,
    attempts INTEGER NOT NULL DEFAULT 1, resources TEXT NOT NULL, handle TEXT,
    created REAL NOT NULL, updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_active ON tasks (state);
"""
_ACTIVE = ("pending", "running", "unknown")
MAX_TASKS = 100


class NotFound(SeqeraError):
    """No run or task with that id."""


def _handle(text: str | None) -> JobHandle | None:
    return None if not text else JobHandle(**json.loads(text))


def _task_spec(index: int, document: Any) -> tuple[JobSpec, ResourceRequest]:
    where = f"$.tasks[{index}]"
    if not isinstance(document, Mapping):
        raise WireError([f"{where}: expected an object"])
    unknown = set(document) - {"name", "image", "command", "environment", "resources", "labels"}
    if unknown:
        raise WireError([f"{where}.{sorted(unknown)[0]}: unexpected key"])
    command = document.get("command")
    if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
        raise WireError([f"{where}.command: expected a non-empty list of strings (an argv)"])
    name = document.get("name") or f"task-{index}"
    environment = document.get("environment") or {}
    labels = document.get("labels") or {}
    for key, value in (("name", name), ("image", document.get("image") or "")):
        if not isinstance(value, str):
            raise WireError([f"{where}.{key}: expected a string"])
    for key, mapping in (("environment", environment), ("labels", labels)):
        if not isinstance(mapping, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
        ):
            raise WireError([f"{where}.{key}: expected an object of strings"])
    try:
        request = wire.structure(document.get("resources") or {}, ResourceRequest)
    except WireError as exc:
        raise WireError([p.replace("$", f"{where}.resources", 1) for p in exc.problems]) from None
    if document.get("image"):
        request = attrs.evolve(request, container=document["image"])
    request = attrs.evolve(request, labels={**request.labels, **labels},
                           process=request.process or name)  # fmt: skip
    spec = JobSpec(name=name, command=tuple(command), request=request, env=environment)
    return spec, request


class Dispatcher:
    """Runs and tasks over one session's backend and one SQLite file; a thread polls active
    tasks, and the session records each finished one in its history."""

    def __init__(self, session: Session, path: str | Path, *, interval: float = 1.0) -> None:
        self.session = session
        self.backend = session.backend
        self.interval = interval
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.executescript(_SCHEMA)

    # -- runs ------------------------------------------------------------------------

    def create_run(self, name: str, labels: Mapping[str, Any]) -> dict[str, Any]:
        """A new run; its labels, over the session's (seqera config, ``$SEQERA_LABELS``), are
        the baseline of every task."""
        run_id = uuid.uuid4().hex
        baseline = {**self.session.labels, **string_labels(labels)}
        with self._lock:
            self._db.execute("INSERT INTO runs VALUES (?, ?, ?, ?, NULL)",
                             (run_id, name, json.dumps(baseline), time.time()))  # fmt: skip
        return {"id": run_id, "name": name, "labels": baseline, "terminated": False}

    def run(self, run_id: str) -> dict[str, Any]:
        """A run as stored."""
        with self._lock:
            row = self._db.execute("SELECT id, name, labels, terminated FROM runs WHERE id = ?",
                                   (run_id,)).fetchone()  # fmt: skip
        if row is None:
            raise NotFound(f"no run {run_id!r}")
        return {"id": row[0], "name": row[1], "labels": json.loads(row[2]),
                "terminated": row[3] is not None}  # fmt: skip

    def terminate(self, run_id: str) -> dict[str, Any]:
        """Cancel every active task of the run (one backend call) and close it."""
        self.run(run_id)
        with self._lock:
            rows = self._db.execute(
                f"SELECT id, handle FROM tasks WHERE run_id = ? AND state IN {_ACTIVE}",
                (run_id,),
            ).fetchall()
            self._db.execute("UPDATE runs SET terminated = ? WHERE id = ?", (time.time(), run_id))
        self._cancel([r[0] for r in rows], [h for _, t in rows if (h := _handle(t))])
        return self.run(run_id)

    # -- tasks -----------------------------------------------------------------------

    def submit(self, run_id: str, documents: Any) -> list[dict[str, Any]]:
        """Validate every task first, then submit them all with one backend call."""
        run = self.run(run_id)
        if run["terminated"]:
            raise ResourceError("run", run_id, "a run that has not been terminated")
        if not isinstance(documents, list) or not 1 <= len(documents) <= MAX_TASKS:
            raise WireError([f"$.tasks: expected a list of 1 to {MAX_TASKS} tasks"])
        parsed = [_task_spec(i, d) for i, d in enumerate(documents)]
        specs, ids, resources = [], [], []
        for spec, request in parsed:
            prepared = prepare(
                request,
                platform=self.session.platform,
                resolvers=self.session.resolvers,
                run_labels=run["labels"],
            )
            specs.append(attrs.evolve(spec, request=prepared.request, labels=prepared.labels))
            ids.append(uuid.uuid4().hex)
            resources.append(wire.unstructure(prepared.request))
        handles = self.backend.submit(specs)
        now = time.time()
        with self._lock:
            self._db.executemany(
                "INSERT INTO tasks VALUES (?, ?, ?, ?, 'pending', NULL, NULL, 1, ?, ?, ?, ?)",
                [(task_id, run_id, spec.name, spec.request.process, json.dumps(res),
                  json.dumps(attrs.asdict(handle)), now, now)
                 for task_id, spec, res, handle in zip(ids, specs, resources, handles,
                                                       strict=True)],
            )  # fmt: skip
        return [self.task(run_id, task_id) for task_id in ids]

    def task(self, run_id: str, task_id: str) -> dict[str, Any]:
        """A task as last seen: state, exit code, reason, attempts, resources granted."""
        with self._lock:
            row = self._db.execute(
                "SELECT id, name, state, exit_code, reason, attempts, resources, handle "
                "FROM tasks WHERE id = ? AND run_id = ?", (task_id, run_id),
            ).fetchone()  # fmt: skip
        if row is None:
            raise NotFound(f"no task {task_id!r} in run {run_id!r}")
        handle = _handle(row[7])
        return {"id": row[0], "name": row[1], "state": row[2], "exit_code": row[3],
                "reason": row[4], "attempts": row[5], "resources": json.loads(row[6]),
                "backend": handle.backend if handle else None,
                "native_id": handle.native_id if handle else None}  # fmt: skip

    def cancel(self, run_id: str, task_id: str) -> dict[str, Any]:
        """Cancel one task (a finished one is left as it ended)."""
        with self._lock:
            row = self._db.execute("SELECT handle, state FROM tasks WHERE id = ? AND run_id = ?",
                                   (task_id, run_id)).fetchone()  # fmt: skip
        if row is None:
            raise NotFound(f"no task {task_id!r} in run {run_id!r}")
        handle = _handle(row[0])
        if row[1] in _ACTIVE and handle is not None:
            self._cancel([task_id], [handle])
        return self.task(run_id, task_id)

    def logs(self, run_id: str, task_id: str) -> str:
        """The task's output so far."""
        with self._lock:
            row = self._db.execute("SELECT handle FROM tasks WHERE id = ? AND run_id = ?",
                                   (task_id, run_id)).fetchone()  # fmt: skip
        if row is None:
            raise NotFound(f"no task {task_id!r} in run {run_id!r}")
        handle = _handle(row[0])
        return "" if handle is None else self.backend.logs(handle)

    def _cancel(self, ids: list[str], handles: list[JobHandle]) -> None:
        if handles:
            self.backend.cancel(handles)
        with self._lock:
            self._db.executemany(
                "UPDATE tasks SET state = 'cancelled', reason = 'cancelled', updated = ? "
                "WHERE id = ? AND state IN ('pending', 'running', 'unknown')",
                [(time.time(), i) for i in ids],
            )

    # -- polling ---------------------------------------------------------------------

    def poll_once(self) -> int:
        """One backend poll for every active task; returns how many are still active."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT id, handle, resources, run_id FROM tasks WHERE state IN {_ACTIVE}"
            ).fetchall()
        active = [(r[0], h, r[2], r[3]) for r in rows if (h := _handle(r[1])) is not None]
        if not active:
            return 0
        statuses = self.backend.poll([handle for _, handle, _, _ in active])
        finished: list[Finished] = []
        with self._lock:
            for (task_id, _, resources, run_id), status in zip(active, statuses, strict=True):
                state, reason = self._state(status)
                self._db.execute(
                    "UPDATE tasks SET state = ?, exit_code = ?, reason = ?, updated = ? "
                    "WHERE id = ?", (state, status.exit_code, reason, time.time(), task_id),
                )  # fmt: skip
                if status.state.finished:
                    request = wire.structure(json.loads(resources), ResourceRequest)
                    finished.append(Finished(request, status, task_id=task_id, run_id=run_id))
        # What dispatched tasks used feeds the resolver; a failing store never fails a task.
        self.session.record(finished)
        return sum(not s.state.finished for s in statuses)

    def _state(self, status: JobStatus) -> tuple[str, str | None]:
        if status.state is JobState.UNKNOWN and status.handle.backend == "local":
            # Local jobs are children of the sidecar: after a restart they are gone. A
            # scheduler's unknown job may only be late to show; it is asked again.
            return "failed", "lost: the sidecar restarted while this local job ran"
        # Why it failed in the words every engine uses.
        reason = failure_message(status) if cause(status) else status.reason
        return status.state.value, reason

    def start(self) -> None:
        """Poll in a background thread until :meth:`stop`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="seqera-poll", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.poll_once()
            except SeqeraError:
                continue  # the scheduler is busy or restarting: ask again next time

    def stop(self) -> None:
        """Stop polling (submitted jobs keep running) and close the database; the session,
        which owns the backend, is closed by whoever opened it."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        with self._lock:
            self._db.close()
