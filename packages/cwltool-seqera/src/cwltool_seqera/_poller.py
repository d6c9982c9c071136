"""One backend shared by every job of a run: submit, then wait while one thread polls all."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from seqera_core.backends import Backend, JobHandle, JobSpec, JobState, JobStatus

__all__ = ["JobPoller"]

_log = logging.getLogger(__name__)


class JobPoller:
    """Submits jobs from many threads; one poller thread asks the backend about all of them
    with a single ``poll`` per cycle and wakes each job's thread when its job has ended."""

    def __init__(
        self,
        backend: Backend,
        *,
        interval: float = 1.0,
        unknown_timeout: float = 300.0,
        submit: Callable[[Sequence[JobSpec]], list[JobHandle]] | None = None,
    ) -> None:
        self.backend = backend
        # the session's submit, which adopts what a dead run left (default: the backend's)
        self._submit = submit or backend.submit
        self.interval = interval
        # A job whose status stays UNKNOWN (or cannot be polled at all) this many seconds
        # in a row is given up on and reported as lost, never waited for forever.
        self.unknown_timeout = unknown_timeout
        self._unknown_since: dict[JobHandle, float] = {}
        # Backends are not promised to be thread-safe: every call goes through this lock.
        self._calls = threading.Lock()
        self._state = threading.Condition()
        self._waiting: dict[JobHandle, threading.Event] = {}
        self._results: dict[JobHandle, JobStatus] = {}
        # CWL time limits are seconds, Slurm's whole minutes: the poller enforces the rest.
        self._limits: dict[JobHandle, float] = {}
        self._started: dict[JobHandle, float] = {}
        # Overdue jobs whose cancel failed (the scheduler down): since when it has failed.
        self._cancel_failing: dict[JobHandle, float] = {}
        self._thread: threading.Thread | None = None
        self._closed = False

    def run(
        self,
        spec: JobSpec,
        on_submit: Callable[[JobHandle], None] | None = None,
        limit: float | None = None,
    ) -> JobStatus:
        """Submit one job and block until it has finished (or the poller is closed).

        ``limit``: seconds the job may run; past it the job is cancelled and reported as
        killed for its time limit, whatever granularity the scheduler's own limit has.
        """
        with self._state:
            if self._closed:
                raise RuntimeError("the run is being cancelled; no more jobs are submitted")
        with self._calls:
            (handle,) = self._submit([spec])
        if on_submit is not None:
            on_submit(handle)
        return self.follow(handle, limit)

    def follow(self, handle: JobHandle, limit: float | None = None) -> JobStatus:
        """Block until a job already submitted (or adopted) has finished; see :meth:`run`."""
        done = threading.Event()
        with self._state:
            closed = self._closed
            if not closed:
                self._waiting[handle] = done
                if limit:
                    self._limits[handle] = float(limit)
                self._ensure_thread()
                self._state.notify_all()
        if closed:
            # sent while cancel_all ran (a signal during the submission): cancelled
            # here, or it would run on with nobody watching
            with self._calls:
                self.backend.cancel([handle])
            return JobStatus(handle, JobState.CANCELLED, reason="cancelled by cwltool-seqera")
        # Never an unbounded wait: a poller that died is started again.
        while not done.wait(timeout=max(self.interval, 0.5) * 10):
            with self._state:
                self._ensure_thread()
        with self._state:
            return self._results.pop(handle)

    def _ensure_thread(self) -> None:
        # Called with self._state held.
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._poll_loop, daemon=True)
            self._thread.start()

    def cancel_all(self) -> list[JobHandle]:
        """Cancel every job still waiting (Ctrl-C); returns the handles cancelled."""
        with self._state:
            self._closed = True
            handles = list(self._waiting)
        if handles:
            with self._calls:
                self.backend.cancel(handles)
        with self._state:
            for handle in handles:
                event = self._waiting.pop(handle, None)
                if event is not None:
                    self._results[handle] = JobStatus(
                        handle, JobState.CANCELLED, reason="cancelled by cwltool-seqera"
                    )
                    event.set()
            self._state.notify_all()
        return handles

    def close(self) -> None:
        """Cancel what is left and stop the poller."""
        self.cancel_all()
        with self._state:
            thread, self._thread = self._thread, None
            self._state.notify_all()
        if thread is not None:
            thread.join(timeout=self.interval + 5)

    def _finish(self, status: JobStatus) -> None:
        # Called with self._state held.
        event = self._waiting.pop(status.handle, None)
        self._limits.pop(status.handle, None)
        self._started.pop(status.handle, None)
        self._unknown_since.pop(status.handle, None)
        self._cancel_failing.pop(status.handle, None)
        if event is not None:
            self._results[status.handle] = status
            event.set()

    def _poll_loop(self) -> None:
        while True:
            with self._state:
                self._state.wait_for(lambda: self._waiting or self._closed)
                if self._closed and not self._waiting:
                    return
            try:
                self._cycle()
            except Exception:  # nothing may end the loop while jobs wait on it
                _log.warning("a polling cycle failed; trying again", exc_info=True)
            with self._state:
                # Sleep, but wake at once on close.
                self._state.wait_for(lambda: self._closed, timeout=self.interval)

    def _cycle(self) -> None:
        with self._state:
            handles = list(self._waiting)
        if not handles:
            return
        try:
            with self._calls:
                statuses = self.backend.poll(handles)
        except Exception as err:  # a flaky scheduler command: try again next cycle
            _log.warning("polling %d job(s) failed; retrying", len(handles), exc_info=True)
            why = f"polling failed: {err}"
            statuses = [JobStatus(h, JobState.UNKNOWN, reason=why) for h in handles]
        now = time.monotonic()
        overdue: list[JobStatus] = []
        lost: list[JobStatus] = []
        with self._state:
            for status in statuses:
                handle = status.handle
                if status.state is JobState.UNKNOWN:
                    since = self._unknown_since.setdefault(handle, now)
                    if now - since > self.unknown_timeout:
                        lost.append(status)
                    continue
                self._unknown_since.pop(handle, None)
                if status.state is JobState.RUNNING:
                    started = self._started.setdefault(handle, now)
                    if handle in self._limits and now - started > self._limits[handle]:
                        overdue.append(status)
                if status.state.finished:
                    self._finish(status)
        if overdue:
            self._cancel_overdue(overdue, now)
        if lost:
            self._give_up(lost)

    def _cancel_overdue(self, overdue: list[JobStatus], now: float) -> None:
        """Cancel jobs past their limit; a job whose cancel fails keeps being cancelled each
        cycle (it still runs) until ``unknown_timeout``, then is reported failed anyway."""
        handles = [status.handle for status in overdue]
        try:
            with self._calls:
                self.backend.cancel(handles)
        except Exception as err:
            _log.warning("cancelling %d overdue job(s) failed; trying again: %s", len(handles), err)
            with self._state:
                for handle in handles:
                    since = self._cancel_failing.setdefault(handle, now)
                    if now - since > self.unknown_timeout:
                        limit = self._limits.get(handle)
                        self._finish(JobStatus(
                            handle, JobState.FAILED, time_limit=True,
                            reason=f"ran past its {limit:g} s and could not be cancelled "
                            f"for {self.unknown_timeout:g} s ({err})",
                        ))  # fmt: skip
            return
        with self._state:
            for status in overdue:
                limit = self._limits.get(status.handle)
                self._finish(JobStatus(
                    status.handle, JobState.FAILED, reason=f"ran past its {limit:g} s",
                    time_limit=True,
                ))  # fmt: skip

    def _give_up(self, lost: list[JobStatus]) -> None:
        # Best effort: the job may still exist somewhere the backend cannot see.
        try:
            with self._calls:
                self.backend.cancel([status.handle for status in lost])
        except Exception:
            _log.warning("cancelling %d lost job(s) failed", len(lost), exc_info=True)
        with self._state:
            for status in lost:
                self._finish(JobStatus(
                    status.handle, JobState.UNKNOWN,
                    reason=f"no known status for {self.unknown_timeout:g} s, given up "
                    f"({status.reason or 'unknown state'})",
                ))  # fmt: skip
