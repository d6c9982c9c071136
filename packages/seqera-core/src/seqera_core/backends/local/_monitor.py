"""The local backend's monitor thread: it starts, limits, samples and reaps the jobs.

Scheduling (``_backfill``): jobs start in submission order while they fit the free cores
and memory; a job that does not fit waits at the head of the queue with a reservation,
and later jobs may start before it only if they cannot delay it (EASY backfilling: they
end, by their time limit, before the head could start anyway, or they only use what the
head leaves spare). Cores are reserved whole, as ``dialects.local`` reports them.

Starting (``_launch``): a new process in a new session, or, with ``preload``
(Python entry points, e.g. Snakemake's) or a ``fork_server``, a ``python -m`` job of a
preloaded package as a fork of a preloaded server (``_forking``): same log files,
directory, environment, session, exit code, limits and cancellation.

Measurement: ``peak_memory_bytes`` is the largest of the sum of the resident sizes of
every process in the job's session, sampled every ``sample_interval`` seconds (shared
pages count once per process: an over-estimate); the kernel's exact high-water mark
(``VmHWM``) of any single process seen while sampling (``_procfs``); and the leader's
``ru_maxrss`` where it says something about the job (``_reap``). A spike shorter
than ``sample_interval`` in a process that is not waited for can be missed, and a job
shorter than that may only have one early sample, a lower bound. ``None``: nothing was
measured. ``cpu_seconds`` is the larger of the session's CPU time seen while sampling
and the leader's rusage (user + system, its waited-for children included) when reaped.

Ending (``_reap``, ``_limits``): when the leader exits, what it left behind
in its group is killed before it is reaped. Time limits and cancellation send SIGTERM to
the group, then SIGKILL after ``kill_grace`` seconds; memory enforcement sends SIGKILL at
once, as the kernel OOM killer. A job killed by signal N reports exit code 128 + N.
"""

from __future__ import annotations

import os
import threading
import time
from collections import deque

from ..base import Backend, JobState
from ._backfill import backfill
from ._cgroup import MemoryCgroups
from ._forking import ForkServer
from ._job import LocalJob, outcome
from ._launch import launch
from ._limits import enforce, over_memory
from ._procfs import scan_sessions
from ._reap import reap
from ._records import JobRecords
from ._watch import Wakeup, watched

__all__ = ["Monitor"]


class Monitor(Backend):
    """The monitor thread of :class:`~._backend.LocalBackend`, and how a job ends.

    The thread runs while any job is queued or running: it reaps the jobs that ended,
    enforces their time and memory limits, samples their memory and starts the queued
    jobs that fit (see the module's docstring); it exits when idle, and the next
    submission or cancel starts another. ``LocalBackend.__init__`` sets the attributes
    below; the thread reads and changes them under ``_lock``.
    """

    capacity_cpus: float
    capacity_memory: int
    sample_interval: float
    enforce_memory: bool
    _cgroups: MemoryCgroups | None
    _lock: threading.Lock
    _idle: threading.Condition
    _ended: threading.Condition  # notified whenever a job finishes
    _queue: deque[LocalJob]
    _running: dict[str, LocalJob]
    _thread: threading.Thread | None
    _wakeup: Wakeup | None
    _detached: bool
    _records: JobRecords | None
    _forker: ForkServer | None

    # -- the monitor thread ---------------------------------------------------------

    def _wake(self) -> None:
        # Under the lock. The thread exits when idle, so start one if none is running.
        if self._thread is None:
            self._wakeup = Wakeup()
            self._thread = threading.Thread(
                target=self._monitor, args=(self._wakeup,), name="seqera-local", daemon=True
            )
            self._thread.start()
        elif self._wakeup is not None:
            self._wakeup.wake()

    def _monitor(self, wakeup: Wakeup) -> None:
        try:
            self._loop(wakeup)
        except BaseException:
            # Never leave a dead thread registered: the next submit or cancel starts a new
            # one, which picks the running jobs up again. The traceback goes to excepthook.
            with self._lock:
                if self._thread is threading.current_thread():
                    self._stop(wakeup)
            raise

    def _loop(self, wakeup: Wakeup) -> None:
        next_sample = 0.0
        while True:
            with self._lock:
                now = time.monotonic()
                self._reap(now)
                running = self._running.values()
                self.calls["kill"] += enforce(running, self._forker, now, self.kill_grace)
                self._schedule(now)
                if (not self._running and not self._queue) or self._detached:
                    self._stop(wakeup)
                    return
                sessions: dict[int, LocalJob] = {}
                if now >= next_sample:
                    sessions = {job.pid: job for job in self._running.values()}
                    next_sample = now + self.sample_interval
            if sessions:
                # /proc is read without the lock: only this thread reaps, so no pid is reused.
                usage = scan_sessions(sessions)
                with self._lock:
                    self.calls["sample"] += 1
                    self.calls["kill"] += over_memory(
                        sessions, usage, self._forker, enforce_memory=self.enforce_memory
                    )
            with self._lock:
                fds, until = watched(
                    list(self._running.values()), self._forker, bool(self._queue), next_sample
                )
            wakeup.sleep(fds, until)

    def _stop(self, wakeup: Wakeup) -> None:
        wakeup.close()
        self._wakeup = None
        self._thread = None
        self._idle.notify_all()

    def _schedule(self, now: float) -> None:
        if (
            self._queue
            and self._forker is not None
            and self._forker.holds(self._queue[0].spec.command)
        ):
            return  # its fork server is still loading: a fork soon beats a new process now
        chosen = backfill(
            self._queue, list(self._running.values()), self.capacity_cpus,
            self.capacity_memory, now, self.kill_grace,
        )  # fmt: skip
        for job in chosen:
            self._queue.remove(job)
            self._start(job, now)

    def _start(self, job: LocalJob, now: float) -> bool:
        failed = launch(job, forker=self._forker, records=self._records, calls=self.calls,
                        cgroups=self._cgroups)  # fmt: skip
        if failed is not None:
            self._finish(job, now, JobState.FAILED, failed.code, failed.reason)
            return False
        # A fork was asked for and acknowledged in this call: its clock starts after it.
        job.started = time.monotonic() if job.forked else now
        job.state = JobState.RUNNING
        job.started_wall = time.time()
        if self._records is not None:
            self._records.started(job.handle.native_id, job.pid, job.started_wall)
        self._running[job.handle.native_id] = job
        return True

    def _reap(self, now: float) -> None:
        if self._forker is not None:
            self._forker.collect()
        for job in list(self._running.values()):
            ended = reap(job, self._forker, self._records, now)
            if ended is None:
                continue
            self.calls["reap"] += 1
            self._release(job)
            if ended.code is None:
                self._finish(job, now, JobState.FAILED, None, ended.lost)
                continue
            job.peak = max(job.peak, ended.peak)
            if ended.cpu is not None:
                job.cpu = max(job.cpu or 0.0, ended.cpu)
            self._measured(job)
            self._finish(job, now, *outcome(job, ended.code))

    def _measured(self, job: LocalJob) -> None:
        """The peak and an OOM kill from the job's cgroup, which goes with it."""
        if job.cgroup is None or self._cgroups is None:
            return
        peak = self._cgroups.peak(job.cgroup)
        if peak is not None:
            job.peak = peak  # the kernel's count, shared pages once
        if self._cgroups.oom_killed(job.cgroup):
            job.out_of_memory = True
        self._cgroups.remove(job.cgroup)

    def _release(self, job: LocalJob) -> None:
        if job.pidfd is not None:
            os.close(job.pidfd)
            job.pidfd = None
        del self._running[job.handle.native_id]

    def _finish(
        self, job: LocalJob, now: float, state: JobState, code: int | None, reason: str | None
    ) -> None:
        job.state, job.exit_code, job.reason, job.ended = state, code, reason, now
        self._ended.notify_all()
        job.process = None  # the record outlives the process; keep it small
        if self._records is not None:
            wall = None if job.started is None else now - job.started
            self._records.finished(job.handle.native_id, {
                "state": state.value, "exit_code": code, "reason": reason,
                "out_of_memory": job.out_of_memory, "time_limit": job.time_limit,
                "wall": wall, "peak": job.peak or None, "cpu": job.cpu,
                "ended": time.time()})  # fmt: skip
