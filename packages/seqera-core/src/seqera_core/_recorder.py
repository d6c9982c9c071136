"""The history's write policy for one run: a store that fails never fails a job.

Every finished attempt goes through :meth:`Recorder.record`. Rows the store cannot take
(a locked SQLite file, a PostgreSQL server that restarts) wait in memory and go with the
next write, or at :meth:`Recorder.close`, which keeps trying for a while; past
``_MAX_PENDING`` the oldest are dropped, loudly. A shared history that another process
held locked at the run's start is the same case: the run goes on without the history's
sizing and the store is opened when there are rows to write.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from .errors import HistoryError, SeqeraError
from .history import History, TaskRecord, open_history

__all__ = ["Recorder"]

# Rows kept while the history cannot take them; past this the oldest are dropped, loudly.
_MAX_PENDING = 100_000
# How long close() keeps trying to write waiting rows: past a server restart (seconds).
_CLOSE_PATIENCE = 30.0


class Recorder:
    """Where one run's finished attempts go: the named history, else the default home.

    Args:
        location: the history the user named (sizing reads it too), or None.
        record_to: where attempts are recorded when none is named (recorded only).
        warn: where warnings go.
    """

    def __init__(
        self, location: str | None, record_to: str | None, warn: Callable[[str], None]
    ) -> None:
        self._warn = warn
        self._pending: list[TaskRecord] = []
        self._lock = threading.Lock()
        self._opening = threading.Lock()
        self.history: History | None = None
        # a history that stayed locked past its busy timeout at start: opened again later
        self._deferred: str | None = None
        if location:
            path = os.path.expanduser(location)
            try:
                self.history = open_history(path)
            except HistoryError as exc:
                self._deferred = path
                warn(f"{exc}; the run goes on without its sizing and records its tasks "
                     "once the history opens")  # fmt: skip
        elif record_to:
            self.history = self._record_only(record_to)

    def _record_only(self, location: str) -> History | None:
        """The default history, for the summary and ``seqera report``; a run goes on
        without it (with a warning) where it cannot be opened (a read-only home)."""
        path = Path(os.path.expanduser(location))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            return open_history(str(path))
        except (OSError, SeqeraError) as exc:
            self._warn(f"no task history at {path}: {exc}; this run is not recorded")
            return None

    @property
    def active(self) -> bool:
        """Whether attempts go to a history (one open now, or one locked at start)."""
        return self.history is not None or self._deferred is not None

    @property
    def waiting(self) -> int:
        """Finished attempts still waiting for the history."""
        with self._lock:
            return len(self._pending)

    def record(self, rows: list[TaskRecord]) -> int:
        """Write ``rows`` and any that waited; returns how many were written. Never raises:
        a store that fails keeps the rows for the next call and says so once per failure."""
        if not self.active:
            return 0
        with self._lock:
            self._pending.extend(rows)
            if len(self._pending) > _MAX_PENDING:
                lost = len(self._pending) - _MAX_PENDING
                del self._pending[:lost]
                self._warn(f"the history kept failing: {lost} finished attempts were not kept")
            waiting, self._pending = self._pending, []
        if not waiting:
            return 0
        try:
            return self._store().record(waiting)
        except HistoryError as exc:
            with self._lock:
                self._pending[:0] = waiting
            self._warn(
                f"could not record {len(waiting)} finished attempts in the history, "
                f"will try again: {exc}"
            )
            return 0

    def _store(self) -> History:
        """The history, opened now if it was locked at start (raises HistoryError while it
        still is)."""
        with self._opening:  # two threads recording at once open it once
            if self.history is None:
                assert self._deferred is not None  # callers check there is one to open
                self.history = open_history(self._deferred)
                self._deferred = None
            return self.history

    def close(self) -> None:
        """Write the waiting rows, then close the store."""
        if self.active:
            self._flush()
        if self.history is not None:
            self.history.close()

    def _flush(self) -> None:
        """Write the waiting rows, trying again for ``_CLOSE_PATIENCE`` seconds: a run that
        ends while a shared server restarts would otherwise drop them with its last call."""
        deadline, pause = time.monotonic() + _CLOSE_PATIENCE, 0.5
        while self._pending:
            try:
                self._store().record(self._pending)
                self._pending = []
            except HistoryError as exc:
                if time.monotonic() + pause > deadline:
                    self._warn(f"{len(self._pending)} finished attempts were not "
                               f"recorded in the history: {exc}")  # fmt: skip
                    return
                if pause == 0.5:  # once: the retries themselves say nothing new
                    self._warn(f"the history is unavailable, trying again for up to "
                               f"{_CLOSE_PATIENCE:g} s: {exc}")  # fmt: skip
                time.sleep(pause)
                pause = min(pause * 2, 5.0)
