"""The local backend: each job a process group on this machine, within a cpu and memory budget.

Scheduling (``_backfill``): jobs start in submission order while they fit the free cores
and memory; a job that does not fit waits at the head of the queue with a reservation,
and later jobs may start before it only if they cannot delay it (EASY backfilling: they
end, by their time limit, before the head could start anyway, or they only use what the
head leaves spare). Cores are reserved whole, as ``dialects.local`` reports them.

Starting (``_local_launch``): a new process in a new session, or, with ``preload``
(Python entry points, e.g. Snakemake's) or a ``fork_server``, a ``python -m`` job of a
preloaded package as a fork of a preloaded server (``_forking``): same log files,
directory, environment, session, exit code, limits and cancellation.

Measurement: ``peak_memory_bytes`` is the largest of the sum of the resident sizes of
every process in the job's session, sampled every ``sample_interval`` seconds (shared
pages count once per process: an over-estimate); the kernel's exact high-water mark
(``VmHWM``) of any single process seen while sampling (``_procfs``); and the leader's
``ru_maxrss`` where it says something about the job (``_local_reap``). A spike shorter
than ``sample_interval`` in a process that is not waited for can be missed, and a job
shorter than that may only have one early sample, a lower bound. ``None``: nothing was
measured. ``cpu_seconds`` is the larger of the session's CPU time seen while sampling
and the leader's rusage (user + system, its waited-for children included) when reaped.

Ending (``_local_reap``, ``_local_limits``): when the leader exits, what it left behind
in its group is killed before it is reaped. Time limits and cancellation send SIGTERM to
the group, then SIGKILL after ``kill_grace`` seconds; memory enforcement sends SIGKILL at
once, as the kernel OOM killer. A job killed by signal N reports exit code 128 + N.

Re-adoption: with a ``state`` directory, every job is recorded there (``_records``: its
spec when queued, its leader's pid and start time when started, its exit status written
as it ends by a ``sh`` wrapper or, for a fork, by the job and its fork server, how it
ended), so a new backend on the same directory, after its predecessor died (even by
SIGKILL), takes the jobs back: running ones are polled, sampled, time-limited and
cancellable again, finished ones report their exit code, and queued ones (whose queue
died) are queued again; none runs twice. The fork server works the same with or without
it. ``find(keys)`` answers which submission keys it holds. ``detach()`` stops watching
without ending the jobs; ``close()`` deletes the records of the jobs whose end a poll
reported (the rest are pruned a week after they ended).
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Sequence
from pathlib import Path

import attrs

from ...errors import ResourceError
from ..base import Backend, JobHandle, JobSpec, JobState, JobStatus
from ._backfill import backfill, check
from ._cgroup import MemoryCgroups
from ._forking import ForkServer
from ._job import LocalJob, adopt, file_name, order, outcome
from ._launch import launch
from ._limits import enforce, over_memory, terminate
from ._procfs import machine_cpus, machine_memory, scan_sessions
from ._reap import reap
from ._records import JobRecords, job_key
from ._watch import Wakeup, watched

__all__ = ["LocalBackend"]

_log = logging.getLogger("seqera_core.backends.local")


class LocalBackend(Backend):
    """Runs jobs as subprocesses of this process, never beyond the cores and memory given.

    Args:
        cpus: cores to share between jobs; defaults to the cores this process may use.
        memory: bytes to share between jobs; defaults to the machine's physical memory.
        work_dir: directory for log files of jobs that name none; defaults to a new
            temporary directory, created on first use and left for the caller.
        kill_grace: seconds between SIGTERM and SIGKILL on a time limit or a cancel.
        sample_interval: seconds between samples of the jobs' memory use.
        enforce_memory: kill (and flag ``out_of_memory``) a job whose memory exceeds its
            request: the kernel does, in a memory cgroup of the job's own, wherever one
            can be made (``_cgroup``; its peak is the cgroup's); elsewhere a sample over
            the request does (said once, at start).
        memory_cgroups: put jobs in memory cgroups where one can be made (False: sample).
        preload: Python entry points (``module`` or ``module:function``) a fork server,
            started at once, loads; ``PYTHON -m MODULE`` jobs of those packages then
            start as its forks (about 0.2 s of CPU for a Snakemake job, not 3.7 s).
        fork_server: a fork server the caller started earlier (``ForkServer(preload,
            fork=True)``, forked from an engine before it ran threads), used instead of
            starting one for ``preload``; the backend owns it from then on.
        state: a directory where jobs are recorded, so a later backend on it re-adopts
            them (see the module's docstring); None keeps nothing on disk.
    """

    name = "local"

    def __init__(
        self,
        cpus: float | None = None,
        memory: int | None = None,
        work_dir: str | os.PathLike[str] | None = None,
        *,
        kill_grace: float = 5.0,
        sample_interval: float = 0.2,
        enforce_memory: bool = True,
        memory_cgroups: bool = True,
        state: str | os.PathLike[str] | None = None,
        preload: Sequence[str] = (),
        fork_server: ForkServer | None = None,
    ) -> None:
        super().__init__()
        self.capacity_cpus = machine_cpus() if cpus is None else float(cpus)
        self.capacity_memory = machine_memory() if memory is None else int(memory)
        if not self.capacity_cpus > 0:
            raise ResourceError("cpus", cpus, "a number of cores greater than 0")
        if self.capacity_memory <= 0:
            raise ResourceError("memory", memory, "a number of bytes greater than 0")
        self.kill_grace = kill_grace
        self.sample_interval = sample_interval
        self.enforce_memory = enforce_memory
        self._cgroups: MemoryCgroups | None = None
        if enforce_memory and memory_cgroups:
            self._cgroups, why = MemoryCgroups.open()
            if self._cgroups is None:
                _log.warning("local backend: memory limits are sampled every %g s, not "
                             "enforced by the kernel: %s", sample_interval, why)  # fmt: skip
        self._work_dir = None if work_dir is None else Path(work_dir)
        self._instance = uuid.uuid4().hex[:8]
        self._count = 0
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._ended = threading.Condition(self._lock)  # notified whenever a job finishes
        self._jobs: dict[str, LocalJob] = {}
        self._queue: deque[LocalJob] = deque()
        self._running: dict[str, LocalJob] = {}
        self._thread: threading.Thread | None = None
        self._wakeup: Wakeup | None = None
        self._detached = False
        self._records = None if state is None else JobRecords(state, self._instance)
        if self._records is not None:
            self._adopt(self._records)
        if fork_server is None and preload:
            fork_server = ForkServer(preload)
        self._forker = fork_server

    # -- the contract ---------------------------------------------------------------

    def submit(self, jobs: Sequence[JobSpec]) -> list[JobHandle]:
        """Queue every job; raises ResourceError, queueing none, if one can never fit
        (or asks for more than one node: several tasks share this machine's cores)."""
        jobs = [attrs.evolve(s, request=s.request.on_one_machine(self.name)) for s in jobs]
        for spec in jobs:
            self._check(spec)
        with self._lock:
            created = [self._create(spec) for spec in jobs]
            self._queue.extend(created)
            self._wake()
        return [job.handle for job in created]

    def poll(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        """The status of every handle: one in-process read under a lock."""
        with self._lock:
            self.calls["poll"] += 1
            now = time.monotonic()
            statuses = [self._status(handle, now) for handle in handles]
            for status in statuses:
                if status.state.finished and (job := self._find(status.handle)) is not None:
                    job.reported = True  # the caller has its end: the record may go
            return statuses

    def wait(self, handles: Sequence[JobHandle], timeout: float) -> bool:
        """Block until one of ``handles`` has finished or ``timeout`` seconds pass.

        Returns whether one has. An engine that polls on a cadence can sleep in this
        instead, and hear of an end at once rather than at its next poll.
        """

        def ended() -> bool:
            jobs = [self._find(handle) for handle in handles]
            return any(job is None or job.state.finished for job in jobs)

        with self._ended:
            return self._ended.wait_for(ended, timeout)

    def cancel(self, handles: Sequence[JobHandle]) -> None:
        """Drop queued jobs; SIGTERM running ones' process groups (SIGKILL after the grace)."""
        with self._lock:
            self.calls["cancel"] += 1
            now = time.monotonic()
            for handle in handles:
                job = self._find(handle)
                # A job already being ended by its time or memory limit keeps that reason.
                if job is None or job.state.finished or job.cancelled or job.kill_at is not None:
                    continue
                job.cancelled = True
                if job.state is JobState.PENDING:
                    self._queue.remove(job)
                    self._finish(job, now, JobState.CANCELLED, None, "cancelled before it started")
                else:
                    self.calls["kill"] += terminate(job, self._forker, now, self.kill_grace)
            self._wake()

    def logs(self, handle: JobHandle) -> str:
        """The job's output so far: stdout, then stderr if it goes to another file."""
        paths = [handle.stdout, handle.stderr]
        if paths[1] == paths[0]:
            paths.pop()
        text = []
        for path in paths:
            if path is not None:
                with contextlib.suppress(FileNotFoundError):  # not started yet
                    text.append(Path(path).read_bytes().decode(errors="replace"))
        return "".join(text)

    def close(self, timeout: float | None = None) -> None:
        """Cancel every unfinished job and wait for them to end (``kill_grace`` + 5 s default).

        After :meth:`detach`, nothing: the jobs are left to the next backend on ``state``.
        """
        if self._detached:
            return
        with self._lock:
            unfinished = [job.handle for job in self._jobs.values() if not job.state.finished]
        self.cancel(unfinished)
        limit = self.kill_grace + 5.0 if timeout is None else timeout
        with self._idle:
            self._idle.wait_for(lambda: self._thread is None, limit)
            forker, self._forker = self._forker, None
        if forker is not None:
            forker.close()
        if self._cgroups is not None:
            self._cgroups.close()
        if self._records is not None:
            with self._lock:
                seen = [i for i, job in self._jobs.items() if job.reported and job.state.finished]
            self._records.close(prune=seen)

    def find(self, keys: Sequence[str]) -> dict[str, JobHandle]:
        """The jobs carrying these submission keys (see ``job_key``), by key."""
        wanted = set(keys)
        with self._lock:
            return {key: job.handle for job in self._jobs.values()
                    if (key := job_key(job.spec)) in wanted}  # fmt: skip

    def detach(self, timeout: float = 10.0) -> None:
        """Stop watching, leave every job running (a backend on ``state`` adopts them)."""
        if self._records is None:
            self.close()
            return
        with self._idle:
            self._detached = True
            if self._thread is not None:
                self._wake()
            self._idle.wait_for(lambda: self._thread is None, timeout)
            forker, self._forker = self._forker, None
        if forker is not None:
            forker.detach()  # its jobs run on; it records their ends
        self._records.close()

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- submission -----------------------------------------------------------------

    def _check(self, spec: JobSpec) -> None:
        check(spec, self.capacity_cpus, self.capacity_memory)

    def _create(self, spec: JobSpec) -> LocalJob:
        self._count += 1
        native_id = f"{self._instance}.{self._count}"
        stdout = spec.stdout or str(self._logdir() / f"{file_name(spec.name)}.{native_id}.out")
        # Like sbatch: without its own file, stderr joins stdout.
        stderr = spec.stderr or stdout
        handle = JobHandle(self.name, native_id, spec.name, stdout, stderr)
        job = LocalJob.of(handle, spec)
        self._jobs[native_id] = job
        if self._records is not None:
            self._records.queued(handle, spec)
        return job

    def _adopt(self, records: JobRecords) -> None:
        """Take back the jobs recorded in ``records`` by an earlier backend."""
        now, wall = time.monotonic(), time.time()
        with self._lock:
            for found in sorted(records, key=lambda r: order(r.handle.native_id)):
                job = adopt(found, now, wall)
                self._jobs[job.handle.native_id] = job
                if job.state is JobState.PENDING:
                    self._queue.append(job)
                elif job.state is JobState.RUNNING:
                    self._running[job.handle.native_id] = job
            if self._queue or self._running:
                self._wake()

    def _logdir(self) -> Path:
        if self._work_dir is None:
            self._work_dir = Path(tempfile.mkdtemp(prefix="seqera-local-"))
        self._work_dir.mkdir(parents=True, exist_ok=True)
        return self._work_dir

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

    # -- status ---------------------------------------------------------------------

    def _find(self, handle: JobHandle) -> LocalJob | None:
        return self._jobs.get(handle.native_id) if handle.backend == self.name else None

    def _status(self, handle: JobHandle, now: float) -> JobStatus:
        job = self._find(handle)
        if job is None:
            return JobStatus(handle, JobState.UNKNOWN, reason="not a job of this local backend")
        return job.status(now)
