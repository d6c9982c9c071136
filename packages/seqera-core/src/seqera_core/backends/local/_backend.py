"""The local backend: each job a process group on this machine, within a cpu and memory budget.

The monitor thread that schedules, starts, limits, samples and reaps the jobs is
:class:`~._monitor.Monitor`'s (its docstring has the rules); this module holds the job
table, the contract, submission and re-adoption.

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
from ..base import JobHandle, JobSpec, JobState, JobStatus
from ._backfill import check
from ._cgroup import MemoryCgroups
from ._forking import ForkServer
from ._job import LocalJob, adopt, file_name, order
from ._limits import terminate
from ._monitor import Monitor
from ._procfs import machine_cpus, machine_memory
from ._records import JobRecords, job_key
from ._watch import Wakeup

__all__ = ["LocalBackend"]

_log = logging.getLogger("seqera_core.backends.local")


class LocalBackend(Monitor):
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
        ours = fork_server is None and bool(preload)
        if ours:
            fork_server = ForkServer(preload)
        # before adopting: adoption starts the monitor thread, which reaps through it
        self._forker = fork_server
        if self._records is not None:
            try:
                self._adopt(self._records)
            except BaseException:
                if ours and fork_server is not None:
                    fork_server.close()
                raise

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

    # -- status ---------------------------------------------------------------------

    def _find(self, handle: JobHandle) -> LocalJob | None:
        return self._jobs.get(handle.native_id) if handle.backend == self.name else None

    def _status(self, handle: JobHandle, now: float) -> JobStatus:
        job = self._find(handle)
        if job is None:
            return JobStatus(handle, JobState.UNKNOWN, reason="not a job of this local backend")
        return job.status(now)
