"""The local backend: each job a process group on this machine, within a cpu and memory budget
(scheduling in ``_backfill``, the job record in ``_local_job``, /proc sampling in ``_procfs``).

Scheduling: jobs start in submission order while they fit the free cores and memory; a
job that does not fit waits at the head of the queue with a reservation, and later jobs
may start before it only if they cannot delay it (EASY backfilling: they end, by their
time limit, before the head could start anyway, or they only use what the head leaves
spare). Cores are reserved whole, as ``dialects.local`` reports them.

Measurement: ``peak_memory_bytes`` is the largest of
  * the sum of the resident sizes of every process in the job's session, sampled every
    ``sample_interval`` seconds (counts shared pages once per process: an over-estimate);
  * the kernel's exact high-water mark (``VmHWM``) of any single process, seen while sampling;
  * ``ru_maxrss`` from ``wait4`` of the job's leader, which covers children it waited for,
    but only when it exceeds this process's own peak at spawn time: Linux starts a child's
    high-water mark at the parent's resident size (fork copies it, exec keeps it), so a
    smaller value says nothing about the job.
A spike shorter than ``sample_interval`` in a process that is not waited for can be missed,
and a job shorter than that may only have one early sample, a lower bound. ``None`` means
nothing was measured.

Ending: the job's leader is started in a new session, so signals go to the whole process
group. When the leader exits, processes it left behind in its group are killed (Slurm
does the same when a batch script ends), before the leader is reaped so the group id
cannot have been recycled. Time limits and cancellation send SIGTERM, then SIGKILL after
``kill_grace`` seconds; memory enforcement sends SIGKILL at once, as the kernel OOM killer.
A job killed by signal N reports exit code 128 + N, as shells do.

Re-adoption: with a ``state`` directory, every job is recorded there (``_local_records``:
its spec when queued, its leader's pid and start time when started, its exit status
written by a ``sh`` wrapper, how it ended), so a new backend on the same directory, after
its predecessor died (even by SIGKILL), takes the jobs back: running ones are polled,
sampled, time-limited and cancellable again, finished ones report their exit code, and
queued ones (whose queue died) are queued again; none runs twice. ``find(keys)`` answers
which submission keys it holds. ``detach()`` stops watching without ending the jobs.
An adopted job is not this process's child: its end is seen through its pidfd and its
status read from the wrapper's file; what it left behind in its group is not killed.

Forking: with ``preload`` (Python entry points, e.g. Snakemake's), a job whose argv is
``PYTHON -m MODULE ...`` of a preloaded package starts as a fork of a preloaded server
process instead of a new interpreter (``_forking``, ``_forkserver``): same log files,
directory, environment, session and exit code, the same limits and cancellation (the
server signals the group while the leader is unreaped, and kills what the leader left
behind before reaping it, as above); its ``ru_maxrss`` counts from the fork, since every
page resident then is the job's own. Every other job starts as before, and so does
every job of a backend with a ``state`` directory (its wrapper is what a later backend
re-adopts).
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import subprocess
import tempfile
import threading
import time
import uuid
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from ..errors import ResourceError
from ..labels import env_name
from ._backfill import backfill
from ._forking import ForkServer
from ._local_job import LocalJob, file_name, order, outcome, restore
from ._local_records import JobRecords, job_key, start_ticks, wrap
from ._procfs import machine_cpus, machine_memory, own_peak_rss, scan_sessions
from .base import Backend, JobHandle, JobSpec, JobState, JobStatus

__all__ = ["LocalBackend"]


class LocalBackend(Backend):
    """Runs jobs as subprocesses of this process, never beyond the cores and memory given.

    Args:
        cpus: cores to share between jobs; defaults to the cores this process may use.
        memory: bytes to share between jobs; defaults to the machine's physical memory.
        work_dir: directory for log files of jobs that name none; defaults to a new
            temporary directory, created on first use and left for the caller.
        kill_grace: seconds between SIGTERM and SIGKILL on a time limit or a cancel.
        sample_interval: seconds between samples of the jobs' memory use.
        enforce_memory: kill (and flag ``out_of_memory``) a job whose sampled memory
            exceeds its request.
        preload: Python entry points (``module`` or ``module:function``) a fork server,
            started at once, loads; ``PYTHON -m MODULE`` jobs of those packages then
            start as its forks (about 0.2 s of CPU for a Snakemake job, not 3.7 s); not
            with ``state``.
        fork_server: a fork server the caller started earlier (``ForkServer(preload,
            fork=True)``, forked from an engine before it ran threads), used instead of
            starting one for ``preload``; the backend owns it from then on, and closes it
            at once with ``state``.
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
        self._wake_fd: int | None = None
        self._detached = False
        self._records = None if state is None else JobRecords(state)
        if self._records is not None:
            self._adopt(self._records)
        # A re-adoptable job is a process with its wrapper: no fork server then.
        if fork_server is not None and state is not None:
            fork_server.close()
            fork_server = None
        if fork_server is None and preload and state is None:
            fork_server = ForkServer(preload)
        self._forker = fork_server

    # -- the contract ---------------------------------------------------------------

    def submit(self, jobs: Sequence[JobSpec]) -> list[JobHandle]:
        """Queue every job; raises ResourceError, queueing none, if one can never fit."""
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
            return [self._status(handle, now) for handle in handles]

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
                    self._terminate(job, now)
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

    def __enter__(self) -> LocalBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- submission -----------------------------------------------------------------

    def _check(self, spec: JobSpec) -> None:
        if not spec.command:
            raise ResourceError("command", list(spec.command), "a non-empty argv")
        request = spec.request
        cpus = math.ceil(request.cpus or 1)
        if cpus > self.capacity_cpus:
            raise ResourceError(
                "cpus",
                request.cpus,
                f"at most {self.capacity_cpus:g} cores, the capacity of the local backend",
            )
        if request.memory is not None and request.memory > self.capacity_memory:
            raise ResourceError(
                "memory",
                request.memory,
                f"at most {self.capacity_memory} bytes, the capacity of the local backend",
            )

    def _create(self, spec: JobSpec) -> LocalJob:
        self._count += 1
        native_id = f"{self._instance}.{self._count}"
        stdout = spec.stdout or str(self._logdir() / f"{file_name(spec.name)}.{native_id}.out")
        # Like sbatch: without its own file, stderr joins stdout.
        stderr = spec.stderr or stdout
        handle = JobHandle(self.name, native_id, spec.name, stdout, stderr)
        request = spec.request
        job = LocalJob(handle, spec, math.ceil(request.cpus or 1), request.memory or 0)
        self._jobs[native_id] = job
        if self._records is not None:
            self._records.queued(handle, spec)
        return job

    def _adopt(self, records: JobRecords) -> None:
        """Take back the jobs recorded in ``records`` by an earlier backend."""
        now, wall = time.monotonic(), time.time()
        recovered = sorted(records, key=lambda r: order(r.handle.native_id))
        with self._lock:
            for found in recovered:
                spec = found.spec
                job = LocalJob(found.handle, spec, math.ceil(spec.request.cpus or 1),
                           spec.request.memory or 0)  # fmt: skip
                self._jobs[found.handle.native_id] = job
                if found.kind == "queued":
                    self._queue.append(job)
                elif found.kind == "running":
                    job.adopted, job.pid, job.state = True, found.pid, JobState.RUNNING
                    job.started_wall = found.started_wall or wall
                    job.started = now - (wall - job.started_wall)
                    with contextlib.suppress(OSError):
                        job.pidfd = os.pidfd_open(found.pid)
                    self._running[found.handle.native_id] = job
                else:
                    restore(job, found, now)
            if self._queue or self._running:
                self._wake()

    def _logdir(self) -> Path:
        if self._work_dir is None:
            self._work_dir = Path(tempfile.mkdtemp(prefix="seqera-local-"))
        self._work_dir.mkdir(parents=True, exist_ok=True)
        return self._work_dir

    def _environment(self, job: LocalJob) -> dict[str, str]:
        env = dict(os.environ)
        env["SEQERA_JOB_ID"] = job.handle.native_id
        env["SEQERA_JOB_NAME"] = job.spec.name
        env["SEQERA_CPUS"] = str(job.cpus)
        for key, value in {**job.spec.request.labels, **job.spec.labels}.items():
            env[env_name(key)] = value
        env.update(job.spec.env)
        return env

    # -- the monitor thread ---------------------------------------------------------

    def _wake(self) -> None:
        # Under the lock. The thread exits when idle, so start one if none is running.
        if self._thread is None:
            read_fd, self._wake_fd = os.pipe()
            os.set_blocking(self._wake_fd, False)
            self._thread = threading.Thread(
                target=self._monitor, args=(read_fd,), name="seqera-local", daemon=True
            )
            self._thread.start()
            return
        assert self._wake_fd is not None
        with contextlib.suppress(BlockingIOError):  # a full pipe already means "wake up"
            os.write(self._wake_fd, b"x")

    def _monitor(self, wake_read: int) -> None:
        try:
            self._loop(wake_read)
        except BaseException:
            # Never leave a dead thread registered: the next submit or cancel starts a new
            # one, which picks the running jobs up again. The traceback goes to excepthook.
            with self._lock:
                if self._thread is threading.current_thread():
                    self._stop(wake_read)
            raise

    def _loop(self, wake_read: int) -> None:
        next_sample = 0.0
        while True:
            with self._lock:
                now = time.monotonic()
                self._reap(now)
                self._enforce(now)
                self._schedule(now)
                if (not self._running and not self._queue) or self._detached:
                    self._stop(wake_read)
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
                    self._account(sessions, usage)
            with self._lock:
                fds = [job.pidfd for job in self._running.values() if job.pidfd is not None]
                watched = len(fds)
                waits = [next_sample]
                if self._forker is not None and self._forker.alive:
                    fds.append(self._forker.fileno())  # it says when it is ready, a job ended
                    watched += sum(job.forked for job in self._running.values())
                    if self._queue and self._forker.ready_deadline is not None:
                        waits.append(self._forker.ready_deadline)
                if watched < len(self._running):
                    # Without a pidfd (old kernels) an exit is only noticed on a tick.
                    waits.append(time.monotonic() + 0.02)
                for job in self._running.values():
                    waits.extend(t for t in (job.kill_at, job.deadline) if t is not None)
            poller = select.poll()
            for fd in (wake_read, *fds):
                poller.register(fd, select.POLLIN)
            ready = poller.poll(max(0.0, min(waits) - time.monotonic()) * 1000)
            if any(fd == wake_read for fd, _ in ready):
                with contextlib.suppress(BlockingIOError):
                    os.read(wake_read, 4096)

    def _stop(self, wake_read: int) -> None:
        os.close(wake_read)
        if self._wake_fd is not None:
            os.close(self._wake_fd)
        self._wake_fd = None
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
        spec = job.spec
        self.calls["spawn"] += 1
        job.baseline_rss = own_peak_rss()
        stdout, stderr = job.handle.stdout, job.handle.stderr
        assert stdout is not None and stderr is not None
        try:
            out = open(stdout, "wb")  # noqa: SIM115 - handed to the child, closed below
        except OSError as exc:
            self._finish(job, now, JobState.FAILED, None, f"cannot open a log file: {exc}")
            return False
        try:
            err = out if stderr == stdout else open(stderr, "wb")  # noqa: SIM115
        except OSError as exc:
            out.close()
            self._finish(job, now, JobState.FAILED, None, f"cannot open a log file: {exc}")
            return False
        try:
            if self._fork(job, out, err):
                return True
            argv: Sequence[str] = spec.command
            if self._records is not None:
                env = self._environment(job)
                exit_file = self._records.exit_file(job.handle.native_id)
                argv = wrap(spec.command, exit_file, spec.workdir, env.get("PATH"))
            job.process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                cwd=spec.workdir,
                env=self._environment(job),
                start_new_session=True,
            )
        except (OSError, ValueError) as exc:
            # The shell's conventions: 127 not found, 126 found but not executable.
            code = 127 if isinstance(exc, FileNotFoundError) else 126
            reason = f"cannot start {spec.command[0]!r}: {exc}"
            err.write(f"seqera: {reason}\n".encode())
            self._finish(job, now, JobState.FAILED, code, reason)
            return False
        finally:
            out.close()
            if err is not out:
                err.close()
        job.pid = job.process.pid
        try:
            job.pidfd = os.pidfd_open(job.process.pid)
        except (AttributeError, OSError):
            job.pidfd = None
        self._run(job, now)
        return True

    def _run(self, job: LocalJob, now: float) -> None:
        job.started = now
        job.state = JobState.RUNNING
        job.started_wall = time.time()
        if self._records is not None:
            self._records.started(job.handle.native_id, job.pid, job.started_wall)
        self._running[job.handle.native_id] = job

    def _fork(self, job: LocalJob, out: IO[bytes], err: IO[bytes]) -> bool:
        """Start ``job`` as a fork of the preloaded server, if it is one it can start."""
        forker = self._forker
        if forker is None or not forker.accepts(job.spec.command):
            return False
        streams = [out.fileno()] if err is out else [out.fileno(), err.fileno()]
        env = self._environment(job)
        pid = forker.spawn(job.spec.command, job.spec.workdir, env, streams)
        if pid is None:
            return False
        self.calls["fork"] += 1
        job.forked, job.pid = True, pid
        job.baseline_rss = 0  # the child's high-water mark starts at its own size
        self._run(job, time.monotonic())
        return True

    def _reap_forked(self, job: LocalJob, now: float) -> None:
        assert self._forker is not None
        ended = self._forker.exit_status(job.pid)
        if ended is None:
            return
        status, maxrss = ended
        self.calls["reap"] += 1
        self._release(job)
        if status is None:
            self._finish(job, now, JobState.FAILED, None, "exit status lost: the fork server died")
            return
        job.peak = max(job.peak, maxrss)
        self._finish(job, now, *outcome(job, os.waitstatus_to_exitcode(status)))

    def _reap(self, now: float) -> None:
        if self._forker is not None:
            self._forker.collect()
        for job in list(self._running.values()):
            if job.forked:
                self._reap_forked(job, now)
                continue
            if job.adopted:
                self._reap_adopted(job, now)
                continue
            try:
                exited = os.waitid(os.P_PID, job.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                # Someone else in this process waited for it (os.wait()): no status left.
                self._release(job)
                self._finish(job, now, JobState.FAILED, None, "exit status lost (reaped elsewhere)")
                continue
            if exited is None:
                continue
            # The zombie leader still holds the group id: this cannot reach a recycled group.
            self._signal(job, signal.SIGKILL)
            _, status, usage = os.wait4(job.pid, 0)
            self.calls["reap"] += 1
            code = os.waitstatus_to_exitcode(status)
            if job.process is not None:
                job.process.returncode = code  # so Popen never waits for it again
            if usage.ru_maxrss * 1024 > job.baseline_rss:
                job.peak = max(job.peak, usage.ru_maxrss * 1024)
            self._release(job)
            self._finish(job, now, *outcome(job, code))

    def _reap_adopted(self, job: LocalJob, now: float) -> None:
        if start_ticks(job.pid) is not None:
            return  # still running (a zombie waiting for init counts as ended)
        assert self._records is not None
        code = None
        with contextlib.suppress(OSError, ValueError):
            code = int(self._records.exit_file(job.handle.native_id).read_text().strip())
        self._release(job)
        if code is None and job.kill_at is not None:  # ended by our own signal
            code = -(signal.SIGKILL if job.killed else signal.SIGTERM)
        if code is None:
            self._finish(job, now, JobState.FAILED, None,
                         "ended with no exit status (killed by a signal) while its backend "
                         "was not watching")  # fmt: skip
        else:
            self._finish(job, now, *outcome(job, code))

    def _release(self, job: LocalJob) -> None:
        if job.pidfd is not None:
            os.close(job.pidfd)
            job.pidfd = None
        del self._running[job.handle.native_id]

    def _enforce(self, now: float) -> None:
        for job in self._running.values():
            if job.kill_at is not None and now >= job.kill_at and not job.killed:
                self._kill(job)
            deadline = job.deadline
            if deadline is not None and now >= deadline and job.kill_at is None:
                job.time_limit = True
                self._terminate(job, now)

    def _account(
        self, sessions: Mapping[int, LocalJob], usage: Mapping[int, tuple[int, int]]
    ) -> None:
        for pid, (total, highest) in usage.items():
            job = sessions[pid]
            job.peak = max(job.peak, total, highest)
            ending = job.state.finished or job.kill_at is not None
            if self.enforce_memory and job.memory and total > job.memory and not ending:
                job.out_of_memory = True
                self._kill(job)

    def _terminate(self, job: LocalJob, now: float) -> None:
        self._signal(job, signal.SIGTERM)
        job.kill_at = now + self.kill_grace

    def _kill(self, job: LocalJob) -> None:
        self._signal(job, signal.SIGKILL)
        job.killed = True
        job.kill_at = job.kill_at or time.monotonic()

    def _signal(self, job: LocalJob, signum: signal.Signals) -> None:
        self.calls["kill"] += 1
        if job.forked and self._forker is not None:
            self._forker.signal(job.pid, signum)  # only while the server has not reaped it
            return
        # ESRCH: the group is already empty. EPERM: only setuid members are left; nothing
        # more can be done from here, and the job's leader is what the state follows.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(job.pid, signum)

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
                "wall": wall, "peak": job.peak or None, "ended": time.time()})  # fmt: skip

    # -- status ---------------------------------------------------------------------

    def _find(self, handle: JobHandle) -> LocalJob | None:
        return self._jobs.get(handle.native_id) if handle.backend == self.name else None

    def _status(self, handle: JobHandle, now: float) -> JobStatus:
        job = self._find(handle)
        if job is None:
            return JobStatus(handle, JobState.UNKNOWN, reason="not a job of this local backend")
        wall = None
        if job.started is not None:
            wall = (job.ended if job.ended is not None else now) - job.started
        return JobStatus(
            job.handle,
            job.state,
            exit_code=job.exit_code,
            reason=job.reason,
            out_of_memory=job.out_of_memory,
            time_limit=job.time_limit,
            wall_seconds=wall,
            peak_memory_bytes=job.peak or None,
        )
