"""Squashed allocations: many small jobs run inside a few scheduler jobs.

:class:`SquashBackend` wraps a batch backend (Slurm, PBS Pro, Torque). A job that can be
squashed (it has a time limit no longer than the policy's ``max_time``, no GPUs, and fits
an allocation) gets its own directory and script as usual, and an entry in the queue of
its *group*: the jobs whose :func:`~seqera_core.squash.share_key` is equal, so different
accounts, partitions, QoS or containers never share. Allocations of a group run the
launcher (``_launcher.py``, by the on-disk protocol of ``_protocol.py``), which claims
queued jobs while it has cores, memory and time for them and records each one's exit
code, wall time and peak memory.

How many allocations, and how wide: the jobs no live allocation has room for are packed
(``_plan.py``) by the run time the history predicts where one is given, else by
their time limits, into allocations as wide as their jobs can use at once up to the
largest node of their queue; they go out through the wrapped backend in one
``submit``, so those of one shape become one array (``_alloc.py``).

Every job is reported to the engine as if submitted alone, from the files the launcher
writes; everything the backend knows is on disk (``_state.py``), so a new backend
over the same work directory polls the handles an earlier one issued. A claimed job
whose allocation the scheduler reports ended, with no result and no exit code, goes back
to the queue (at most ``max_losses`` times); a job whose script recorded its exit code
is never run again.

Polling is cheap: two directory listings per group and a read of each job that
finished; the scheduler itself is asked about the allocations at most every
``scheduler_every`` seconds, so an engine may poll every ``status_every`` seconds and
learn of a finished job within that.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

import attrs

from ...errors import SeqeraError
from ...squash import SquashMode, SquashPolicy, unsquashable
from ..base import Backend, JobHandle, JobSpec, JobState, JobStatus
from ..batch import SubmitError
from . import _protocol as proto
from ._alloc import Allocator
from ._plan import Decision, Expected, explain
from ._queue import Queueing
from ._state import Job, find_records, parse_native_id
from ._status import look

__all__ = ["SquashBackend"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def _locked(
    method: Callable[Concatenate[SquashBackend, _P], _R],
) -> Callable[Concatenate[SquashBackend, _P], _R]:
    # An engine submits from one thread while its status thread polls (Snakemake's
    # run_jobs and check_active_jobs): one call at a time over the backend's tables.
    @functools.wraps(method)
    def locked(self: SquashBackend, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        with self._lock:
            return method(self, *args, **kwargs)

    return locked


class SquashBackend(Queueing):
    """A batch backend whose small jobs share allocations run by a launcher. Its calls
    may come from several threads (an engine's submitting and status threads); they
    run one at a time.

    Args:
        inner: the backend that submits, polls and cancels the allocations (and every
            job that cannot be squashed): Slurm, PBS Pro, Torque; the local machine in tests.
        work_dir: where job and allocation directories go, visible from the compute
            nodes; defaults to the inner backend's ``work_dir``.
        policy: the squash policy (its mode must be ``squash``).
        idle: seconds an allocation waits for new jobs before it ends.
        python: the interpreter the compute nodes run the launcher with.
        max_losses: how often a job may lose its allocation before it fails.
        preload: Python entry points (``module`` or ``module:function``) each launcher
            imports and calls once; a job whose command is ``python -m MODULE ...`` of
            a preloaded package then starts as a fork of the launcher (see ``_launcher``).
        expected: a job's expected run time (see :func:`history_runtime`), which jobs
            are packed by instead of their time limits.
        scheduler_every: seconds between two questions to the scheduler.
    """

    status_every = 0.5  # seconds between polls worth making: a poll reads a few files

    def __init__(
        self,
        inner: Backend,
        policy: SquashPolicy,
        *,
        work_dir: str | os.PathLike[str] | None = None,
        idle: float = 30.0,
        python: str = sys.executable,
        max_losses: int = 3,
        preload: Sequence[str] = (),
        clock: Callable[[], float] = time.time,
        expected: Expected | None = None,
        scheduler_every: float = 5.0,
    ) -> None:
        super().__init__()
        if policy.mode is not SquashMode.SQUASH:
            raise ValueError(f"SquashBackend needs squash mode, not {policy.mode.value}")
        self.name = inner.name
        self.inner = inner
        self.calls = inner.calls  # one counter: the allocations' sbatch calls are the cost
        self.policy = policy
        self.python = python
        self.max_losses = max_losses
        self.preload = tuple(preload)
        self.expected = expected
        self.scheduler_every = scheduler_every
        self._forkable = {item.partition(":")[0].split(".")[0] for item in self.preload}
        self._clock = clock
        base = work_dir or getattr(inner, "work_dir", None) or Path.home() / ".seqera" / "jobs"
        self.work_dir = Path(base)
        self.root = self.work_dir / "squash" / uuid.uuid4().hex[:12]
        self._serial = itertools.count(1)
        self._groups = {}
        self._adopted = {}
        self._jobs = {}
        self._seen: dict[str, JobStatus] = {}  # the scheduler's last word, by native id
        self._asked = -float("inf")
        self._lock = threading.RLock()
        self._allocator = Allocator(
            inner, policy, self.root, idle=idle, python=python, preload=preload, clock=clock
        )

    # -- which jobs -------------------------------------------------------------------

    def unsquashable(self, spec: JobSpec) -> str | None:
        """Why ``spec`` runs as its own scheduler job, or None when it can be squashed."""
        return unsquashable(spec.request, self.policy)

    def explain(self, specs: Sequence[JobSpec]) -> list[Decision]:
        """What :meth:`submit` would do with ``specs`` on an empty cluster (a dry run)."""
        return explain(specs, self.policy, self.expected, self._allocator.node)

    # -- the Backend contract ----------------------------------------------------------

    @_locked
    def submit(self, jobs: Sequence[JobSpec]) -> list[JobHandle]:
        """Queue the squashable jobs (adding allocations as needed); submit the rest."""
        alone = [(n, spec) for n, spec in enumerate(jobs) if self.unsquashable(spec)]
        handles: dict[int, JobHandle] = {}
        failed: SubmitError | None = None
        if alone:
            try:
                sent = list(enumerate(self.inner.submit([s for _, s in alone])))
            except SubmitError as exc:  # the others still go; raised below, in job order
                failed = exc
                sent = list(zip(exc.positions, exc.submitted, strict=True))
            for i, handle in sent:
                handles[alone[i][0]] = handle
        queued: list[Job] = []
        skip = {n for n, _ in alone}
        for n, spec in enumerate(jobs):
            if n in skip:
                continue
            job = self._new_job(spec)
            queued.append(job)
            handles[n] = job.handle
        # Allocations first: their launchers start (and load what jobs import) while
        # the entries are written; a launcher finding the queue empty waits for them.
        self._allocator.cover(queued, list(self._jobs.values()), self._all_groups())
        for job in queued:
            self._enqueue(job)
        if failed is not None:
            done = sorted(handles)
            raise SubmitError(
                str(failed),
                failed.result,
                [handles[n] for n in done],
                positions=done,
                unknown=[alone[i][0] for i in failed.unknown],
                errors={alone[i][0]: why for i, why in failed.errors.items()},
            ) from failed
        return [handles[n] for n in range(len(jobs))]

    @_locked
    def find(self, keys: Sequence[str]) -> dict[str, JobHandle]:
        """Squashed jobs by their records (every backend's over this work directory);
        the rest, jobs that ran alone, asked of the scheduler (see :meth:`Backend.find`)."""
        found = find_records(self.work_dir / "squash", keys)
        rest = [k for k in keys if k not in found]
        return found | (self.inner.find(rest) if rest else {})

    @_locked
    def poll(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        """Each job's status from its files; the scheduler is asked about the allocations
        (and any job running alone) in one call, at most every ``scheduler_every`` s."""
        self._adopt(handles)
        plain = [h for h in handles if h.native_id not in self._jobs]
        unknown = [h for h in plain if parse_native_id(h.native_id)]
        plain = [h for h in plain if not parse_native_id(h.native_id)]
        now = self._clock()
        if now - self._asked >= self.scheduler_every or any(
            h.native_id not in self._seen for h in plain
        ):
            self._asked = now
            try:
                self._ask(plain)
            except SeqeraError:
                # A job running alone has no other source of its state; a squashed job's
                # files still tell how it is, so a scheduler that cannot answer (a
                # timeout, an authentication outage) holds back no job that ended. The
                # allocations are asked about again after scheduler_every.
                if plain:
                    raise
        listings = {id(g): g.listing() for g in self._all_groups()}
        statuses = []
        for handle in handles:
            job = self._jobs.get(handle.native_id)
            if job is not None:
                queued, claimed = listings[id(job.group)]
                status = self._job_status(job, queued, claimed)
            elif handle in unknown:
                why = f"no record of this squashed job under {self.work_dir / 'squash'}"
                status = JobStatus(handle, JobState.FAILED, reason=why)
            else:
                status = self._seen[handle.native_id]
            statuses.append(attrs.evolve(status, handle=handle))
        # requeued jobs, and any whose planned allocation ended unclaimed, need room
        waiting = [j for j in self._jobs.values() if self._uncovered(j, listings[id(j.group)][0])]
        if waiting:
            self._allocator.cover(waiting, list(self._jobs.values()), self._all_groups())
        # queued allocations whose jobs others took or that were cancelled: not needed
        self._allocator.cancel_idle(list(self._jobs.values()), self._all_groups())
        return statuses

    @_locked
    def cancel(self, handles: Sequence[JobHandle]) -> None:
        """Cancel jobs: queued ones never start, running ones are killed by their launcher."""
        self._adopt(handles)
        plain = [h for h in handles if h.native_id not in self._jobs]
        for handle in handles:
            job = self._jobs.get(handle.native_id)
            if job is None or job.final is not None or job.cancelled:
                continue
            job.cancelled = True
            directory = job.group.directory
            with contextlib.suppress(FileNotFoundError):
                os.rename(
                    directory / proto.QUEUE / f"{job.key}.json",
                    directory / proto.CANCELLED / f"{job.key}.json",
                )
                continue  # taken out of the queue before any launcher claimed it
            (directory / proto.CANCEL / job.key).touch(mode=0o600)
        plain = [h for h in plain if not parse_native_id(h.native_id)]
        if plain:
            self.inner.cancel(plain)
        self._allocator.cancel_idle(list(self._jobs.values()), self._all_groups())

    def logs(self, handle: JobHandle) -> str:
        """The job's stdout so far, then its stderr if kept apart."""
        if handle.native_id not in self._jobs and not parse_native_id(handle.native_id):
            return self.inner.logs(handle)
        paths = dict.fromkeys(p for p in (handle.stdout, handle.stderr) if p)
        return "".join(_text(Path(p)) for p in paths)

    @_locked
    def close(self) -> None:
        """Tell every launcher to end once it has nothing to run, and cancel idle ones."""
        for group in self._all_groups():
            (group.directory / proto.DRAIN).touch(mode=0o600)
        self._allocator.cancel_idle(list(self._jobs.values()), self._all_groups())
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    @_locked
    def allocations(self) -> dict[str, int]:
        """The scheduler ids of this backend's allocations not ended, and their cores: a
        router counts a running one's cores as room for the jobs it sends here, not as
        another user's load that ends only at its time limit."""
        return {
            a.handle.native_id: a.cpus
            for g in self._all_groups()
            for a in g.live()
            if a.handle is not None
        }

    # -- the scheduler -----------------------------------------------------------------

    def _ask(self, plain: Sequence[JobHandle]) -> None:
        allocations = [a for g in self._all_groups() for a in g.live() if a.handle is not None]
        seen = self.inner.poll([*plain, *(a.handle for a in allocations if a.handle)])
        for status in seen[: len(plain)]:
            self._seen[status.handle.native_id] = status
        for allocation, status in zip(allocations, seen[len(plain) :], strict=True):
            if status.state.finished:
                allocation.end(status.reason or status.state.value)

    # -- a job's status (its group and queue entry: _queue) ---------------------------

    def _job_status(self, job: Job, queued: set[str], claimed: Mapping[str, str]) -> JobStatus:
        if job.final is None:
            status = look(job, queued, claimed, self.max_losses)
            if status.state.finished:
                job.final = status
            job.last = status
        return job.final or job.last or JobStatus(job.handle, JobState.PENDING)

    def _uncovered(self, job: Job, queued: set[str]) -> bool:
        # queued, and the allocation planned for it has ended without claiming it
        return (
            job.final is None
            and not job.cancelled
            and job.key in queued
            and (job.planned is None or job.planned.ended)
        )


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
