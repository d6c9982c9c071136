"""Runs and their tasks: dispatched to a backend, polled together, kept in SQLite.

A run's labels are the baseline every task starts from; a task adds its own delta. Each
task goes through the core's pipeline (resolvers, then labels) before the backend sees
it.

Exactly once: a task may carry its own ``id``; a task sent again with the same run and
id (a client retrying after a timeout or a 503) is answered from its row and never
submitted again. The row is written before the backend is called (state ``submitting``,
with a unique submission key the job carries as ``JobSpec.key`` and
``$SEQERA_SUBMISSION_KEY``). A row left without a handle (the sidecar died mid-submit,
or the backend failed in a way whose outcome is unknown) is reconciled by the poll loop:
``backend.find(keys)`` asks the scheduler for the key; a found job is adopted (polled as
usual), one the scheduler proves it never got is submitted again from the stored spec,
and while the scheduler does not answer the row waits. A backend that cannot look up
(``NoLookup``) is never asked twice: the task becomes ``unknown`` with the reason.

History: every finished task goes to the session's history (``Session.record``, which
never raises and keeps what a locked SQLite or a dropped PostgreSQL connection refused for
the next cycle), so a failing store delays the record, never the task.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from seqera_core import wire
from seqera_core.backends import JobHandle, JobSpec, JobState, JobStatus, NoLookup, SubmitError
from seqera_core.errors import ResourceError, SeqeraError, WireError
from seqera_core.labels import string_labels
from seqera_core.models import ResourceRequest
from seqera_core.outcomes import cause, failure_message
from seqera_core.pipeline import prepare
from seqera_core.session import Finished, Session

from .crashpoints import crash_point
from .poller import Supervisor, redact
from .store import forget, handle_from, open_state, set_handles, set_state, spec_from, spec_to
from .submission import KEY_VARIABLE, Parsed, by_name, keyed, task_spec

__all__ = ["KEY_VARIABLE", "NotFound", "RunStore", "SubmitFailed"]

_log = logging.getLogger("seqera_sidecar")
_ACTIVE = ("pending", "running", "unknown")
MAX_TASKS = 100
_COLUMNS = "id, name, state, exit_code, reason, attempts, resources, handle"


class NotFound(SeqeraError):
    """No run or task with that id."""


class SubmitFailed(SeqeraError):
    """The backend failed; ``tasks`` are those that went out anyway (kept, never lost)."""

    def __init__(self, message: str, tasks: list[dict[str, Any]]) -> None:
        self.tasks = tasks
        super().__init__(message)


class RunStore:
    """Runs and tasks over one backend and one SQLite file; a supervised thread polls."""

    def __init__(self, session: Session, path: str | Path, *, interval: float = 1.0) -> None:
        self.session = session
        self.backend = session.backend
        self._db, self._lockfd = open_state(Path(path))
        self._lock = threading.RLock()
        self._inflight: set[str] = set()  # keys being submitted by a request right now
        self.history_failures = 0
        self.resubmitted = 0
        self.poller = Supervisor("seqera-poll", self.cycle, interval=interval)

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
            raise NotFound(f"no run {run_id[:128]!r}")
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
        self._cancel(run_id, [r[0] for r in rows], [h for _, t in rows if (h := handle_from(t))])
        return self.run(run_id)

    # -- tasks -----------------------------------------------------------------------

    def submit(self, run_id: str, documents: Any) -> list[dict[str, Any]]:
        """Validate every task, write their rows, then submit the new ones in one call."""
        run = self.run(run_id)
        if run["terminated"]:
            raise ResourceError("run", run_id, "a run that has not been terminated")
        if not isinstance(documents, list) or not 1 <= len(documents) <= MAX_TASKS:
            raise WireError([f"$.tasks: expected a list of 1 to {MAX_TASKS} tasks"])
        parsed = [task_spec(i, d) for i, d in enumerate(documents)]
        given = [p.id for p in parsed if p.id is not None]
        if len(set(given)) < len(given):
            raise WireError(["$.tasks: two tasks have the same id"])
        ids, fresh = self._claim(run_id, run["labels"], parsed)
        if fresh:
            self._submit(run_id, fresh)
        return [self.task(run_id, task_id) for task_id in ids]

    def _claim(
        self, run_id: str, baseline: Mapping[str, str], parsed: list[Parsed]
    ) -> tuple[list[str], list[tuple[str, str, JobSpec]]]:
        """Rows for tasks not seen before (state ``submitting``); ids of every task."""
        # Resolvers may call out (HTTP): asked before the lock, even for retries.
        specs = []
        for item in parsed:
            prepared = prepare(item.spec.request, platform=self.session.platform,
                               resolvers=self.session.resolvers, run_labels=baseline)  # fmt: skip
            specs.append(attrs.evolve(item.spec, request=prepared.request, labels=prepared.labels))
        ids, rows, fresh = [], [], []
        now = time.time()
        with self._lock:
            for item, prepared_spec in zip(parsed, specs, strict=True):
                task_id = item.id or uuid.uuid4().hex
                ids.append(task_id)
                found = self._db.execute("SELECT digest FROM tasks WHERE run_id = ? AND id = ?",
                                         (run_id, task_id)).fetchone()  # fmt: skip
                if found is not None:
                    if found[0] != item.digest:
                        raise ResourceError("id", task_id, "a task id not used before in this "
                                            "run for a different task")  # fmt: skip
                    continue  # a retry: answered from its row, never submitted again
                key = f"seqera-{uuid.uuid4().hex}"
                spec = keyed(prepared_spec, key)
                fresh.append((task_id, key, spec))
                rows.append((run_id, task_id, spec.name, spec.request.process,
                             json.dumps(wire.unstructure(spec.request)), key, spec_to(spec),
                             item.digest, now, now))  # fmt: skip
            self._db.execute("BEGIN IMMEDIATE")
            try:
                self._db.executemany(
                    "INSERT INTO tasks (run_id, id, name, process, state, resources, key, "
                    "spec, digest, created, updated) "
                    "VALUES (?, ?, ?, ?, 'submitting', ?, ?, ?, ?, ?, ?)",
                    rows,
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")
            self._inflight.update(key for _, key, _ in fresh)
        return ids, fresh

    def _submit(self, run_id: str, fresh: list[tuple[str, str, JobSpec]]) -> None:
        keys = [key for _, key, _ in fresh]
        crash_point("row-written")
        try:
            handles: list[JobHandle | None] = list(self.backend.submit([s for _, _, s in fresh]))
            crash_point("submitted")
        except ResourceError:
            self._forget(keys)  # refused before anything was sent
            raise
        except Exception as exc:
            mapped = self._after_failure(fresh, exc)
            sent = [task_id for (task_id, _, _), h in zip(fresh, mapped, strict=True) if h]
            raise SubmitFailed(redact(f"{exc}"), [self.task(run_id, t) for t in sent]) from exc
        finally:
            with self._lock:
                self._inflight.difference_update(keys)
        self._store(keys, handles)

    def _after_failure(
        self, fresh: list[tuple[str, str, JobSpec]], exc: Exception
    ) -> list[JobHandle | None]:
        """Which of ``fresh`` reached the backend, asked by key; a row the backend proves
        it never got is forgotten (the client's retry sends it), one it cannot tell about
        yet stays ``submitting`` (:meth:`reconcile` asks again), and without a lookup one
        that may have gone out becomes ``unknown``."""
        keys = [key for _, key, _ in fresh]
        submitted = exc.submitted if isinstance(exc, SubmitError) else ()
        try:
            found = self.backend.find(keys)
        except NoLookup:
            mapped = by_name(fresh, submitted)
            self._store(keys, mapped)
            maybe = {keys[n] for n in exc.unknown} if isinstance(exc, SubmitError) else set(keys)
            left = [k for k, h in zip(keys, mapped, strict=True) if h is None]
            why = f"submission failed: {type(exc).__name__}"
            self._unknown([k for k in left if k in maybe], why)
            self._forget([k for k in left if k not in maybe])  # provably never sent
            return mapped
        except Exception as lookup:  # the backend did not answer: reconcile asks again
            _log.warning("cannot look the failed submission up yet: %s", redact(f"{lookup}"))
            mapped = by_name(fresh, submitted)
            self._store(keys, mapped)
            return mapped
        mapped = [found.get(key) for key in keys]
        self._store(keys, mapped)
        self._forget([k for k, h in zip(keys, mapped, strict=True) if h is None])
        return mapped

    def _store(self, keys: Sequence[str], handles: Sequence[JobHandle | None]) -> None:
        with self._lock:
            set_handles(self._db, keys, handles)

    def _forget(self, keys: Sequence[str]) -> None:
        with self._lock:
            forget(self._db, keys)

    def _mark(self, keys: Sequence[str], state: str, reason: str | None = None) -> None:
        with self._lock:
            set_state(self._db, keys, state, reason)

    def _unknown(self, keys: Sequence[str], why: str) -> None:
        self._mark(keys, "unknown", f"{why}; the backend cannot look jobs up by submission "
                   "key, so the task is not sent again (it may or may not be running)")  # fmt: skip

    def task(self, run_id: str, task_id: str) -> dict[str, Any]:
        """A task as last seen: state, exit code, reason, attempts, resources granted."""
        with self._lock:
            row = self._db.execute(f"SELECT {_COLUMNS} FROM tasks WHERE id = ? AND run_id = ?",
                                   (task_id, run_id)).fetchone()  # fmt: skip
        if row is None:
            raise NotFound(f"no task {task_id[:128]!r} in run {run_id[:128]!r}")
        handle = handle_from(row[7])
        return {"id": row[0], "name": row[1], "state": row[2], "exit_code": row[3],
                "reason": row[4], "attempts": row[5], "resources": json.loads(row[6]),
                "backend": handle.backend if handle else None,
                "native_id": handle.native_id if handle else None}  # fmt: skip

    def _row(self, run_id: str, task_id: str) -> tuple[JobHandle | None, str]:
        with self._lock:
            row = self._db.execute("SELECT handle, state FROM tasks WHERE id = ? AND run_id = ?",
                                   (task_id, run_id)).fetchone()  # fmt: skip
        if row is None:
            raise NotFound(f"no task {task_id[:128]!r} in run {run_id[:128]!r}")
        return handle_from(row[0]), row[1]

    def cancel(self, run_id: str, task_id: str) -> dict[str, Any]:
        """Cancel one task (a finished one is left as it ended)."""
        handle, state = self._row(run_id, task_id)
        if state in (*_ACTIVE, "submitting"):
            self._cancel(run_id, [task_id], [handle] if handle else [])
        return self.task(run_id, task_id)

    def logs(self, run_id: str, task_id: str) -> str:
        """The task's output so far."""
        handle, _ = self._row(run_id, task_id)
        return "" if handle is None else self.backend.logs(handle)

    def _cancel(self, run_id: str, ids: list[str], handles: list[JobHandle]) -> None:
        if handles:
            self.backend.cancel(handles)
        # A task still being submitted is cancelled once its handle is stored (poll_once).
        with self._lock:
            self._db.executemany(
                "UPDATE tasks SET state = CASE WHEN handle IS NULL THEN state ELSE 'cancelled' "
                "END, reason = 'cancelled', updated = ? WHERE run_id = ? AND id = ? AND state "
                "IN ('pending', 'running', 'unknown', 'submitting')",
                [(time.time(), run_id, i) for i in ids],
            )

    # -- the poll cycle ----------------------------------------------------------------

    def cycle(self) -> None:
        """One supervised cycle: reconcile rows without handles, poll, hand records over."""
        self.reconcile()
        self.poll_once()
        if self.session.unrecorded:
            self.session.record([])  # what the history refused before: offered again

    def reconcile(self) -> int:
        """Rows left ``submitting`` by a crash: found by key, else resubmitted (or unknown)."""
        with self._lock:
            rows = [r for r in self._db.execute(
                "SELECT key, spec, reason FROM tasks WHERE state = 'submitting'"
                " AND handle IS NULL").fetchall() if r[0] not in self._inflight]  # fmt: skip
            self._inflight.update(r[0] for r in rows)
        if not rows:
            return 0
        keys = [r[0] for r in rows]
        try:
            try:
                found = self.backend.find(keys)  # not answered: raises, asked next cycle
            except NoLookup:
                self._unknown(keys, "the sidecar stopped while submitting")
                return len(rows)
            self._store(keys, [found.get(k) for k in keys])
            missing = [r for r in rows if r[0] not in found]
            # cancelled before it was ever sent: it never will be
            self._mark([r[0] for r in missing if r[2] == "cancelled"], "cancelled")
            missing = [r for r in missing if r[2] != "cancelled"]
            if missing:
                # Proven absent: the job never reached the backend. Sent now, once.
                try:
                    handles = self.backend.submit([keyed(spec_from(r[1]), r[0]) for r in missing])
                except ResourceError as exc:  # refused before anything went out: for good
                    self._mark([r[0] for r in missing], "failed", f"cannot be submitted: {exc}")
                    return len(rows)
                self.resubmitted += len(missing)
                self._store([r[0] for r in missing], handles)
            return len(rows)
        finally:
            with self._lock:
                self._inflight.difference_update(keys)

    def poll_once(self) -> int:
        """One backend poll for every active task; returns how many are still active."""
        with self._lock:
            rows = self._db.execute(
                "SELECT id, handle, resources, run_id, reason FROM tasks WHERE handle IS NOT "
                f"NULL AND state IN {_ACTIVE}"
            ).fetchall()
        active = [(r[0], h, r[2], r[3], r[4]) for r in rows if (h := handle_from(r[1]))]
        if not active:
            return 0
        late = [h for _, h, _, _, why in active if why == "cancelled"]
        if late:  # cancelled while it was being submitted
            self.backend.cancel(late)
        statuses = self.backend.poll([handle for _, handle, _, _, _ in active])
        now = time.time()
        finished: list[Finished] = []
        with self._lock:
            for (task_id, _, resources, run_id, _), status in zip(active, statuses, strict=True):
                state, reason = self._state(status)
                self._db.execute(
                    "UPDATE tasks SET state = ?, exit_code = ?, reason = ?, updated = ? "
                    "WHERE run_id = ? AND id = ?",
                    (state, status.exit_code, reason, now, run_id, task_id),
                )
                if status.state.finished:
                    request = wire.structure(json.loads(resources), ResourceRequest)
                    finished.append(Finished(request, status, task_id=task_id, run_id=run_id))
        if finished:
            # What dispatched tasks used feeds the resolver; a failing store never fails a
            # task: the session keeps the rows and says so.
            self.session.record(finished)
            if self.session.unrecorded:
                self.history_failures += 1
        return sum(not s.state.finished for s in statuses)

    def unrecorded(self) -> int:
        """Finished tasks the history has not taken yet."""
        return self.session.unrecorded

    def _state(self, status: JobStatus) -> tuple[str, str | None]:
        if status.state is JobState.UNKNOWN and status.handle.backend == "local":
            # Re-adoption (the local backend's state directory) knows every job it ran;
            # one it does not know is gone with its record.
            return "failed", "lost: the local backend has no record of this job"
        # Why it failed in the words every engine uses.
        reason = failure_message(status) if cause(status) else status.reason
        return status.state.value, reason

    def start(self) -> None:
        """Poll in a supervised background thread until :meth:`stop`."""
        self.poller.start()

    def stop(self) -> None:
        """Stop polling and close the database; the session, which owns the backend, is
        closed by whoever opened it. Submitted jobs keep running: a backend that can
        re-adopt its jobs (``detach()``) leaves them for the next sidecar."""
        self.poller.stop()
        detach = getattr(self.backend, "detach", None)
        if callable(detach):
            detach()
        with self._lock:
            self._db.close()
        os.close(self._lockfd)  # the next sidecar may take the state now
