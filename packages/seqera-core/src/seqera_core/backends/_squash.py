"""Squashed allocations: many small jobs run inside a few scheduler jobs.

:class:`SquashBackend` wraps a batch backend (Slurm, PBS Pro, Torque). A job that can be
squashed (it has a time limit no longer than the policy's ``max_time``, no GPUs, and fits
an allocation) gets its own directory and script as usual, and an entry in the queue of
its *group*: the jobs whose :func:`~seqera_core.squash.share_key` is equal, so different
accounts, partitions, QoS or containers never share. Allocations of a group run the
launcher (``_launcher.py``), which claims queued jobs while it has cores, memory and
time for them and records each one's exit code, wall time and peak memory.

How many allocations: the planner packs the jobs no live allocation has room for. Its
three dimensions here are cpu-seconds (cores x time limit), byte-seconds of memory, and
a slot per job, against an allocation of ``cpus`` cores for ``max_time`` holding at most
``max_jobs`` jobs, so the summed work of an allocation fits its time limit. The
allocation then asks for just the time its jobs need. Allocations go out through the
wrapped backend in one ``submit``, so those of one shape become one array.

Every job is reported to the engine as if submitted alone, from the files the launcher
writes. An allocation that ends while a job it claimed has no result (scancel, node
failure, time limit) puts exactly that job back in the queue (at most ``max_losses``
times); a job whose script recorded its exit code is never run again.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from attrs import frozen

from ..catalogue import Catalogue, InstanceType
from ..models import ResourceRequest
from ..planner import Job as PlannedJob
from ..planner import schedule
from ..squash import SLACK, SquashMode, SquashPolicy, share_key, unsquashable
from ..units import MIB
from . import _launcher
from ._batch import JobFiles, job_environment, job_labels, prepare_job
from .base import Backend, JobHandle, JobSpec, JobState, JobStatus

__all__ = ["Decision", "SquashBackend", "allocation_size", "explain", "pack"]


@frozen
class Decision:
    """What would happen to one job, and why: ``squash`` (with its allocation), or ``alone``."""

    job: str
    how: str
    why: str
    allocation: int | None = None


@attrs.define
class _Allocation:
    name: str
    group: _Group
    directory: Path
    cpus: int
    memory: int
    time: int
    handle: JobHandle | None = None
    ended: bool = False
    reason: str | None = None

    def remaining(self, now: float) -> float:
        started = _read(self.directory / "started")
        if not isinstance(started, dict):
            return float(self.time)  # still queued: its whole time limit is ahead
        return float(started.get("time", now)) + self.time - now


@attrs.define
class _Job:
    key: str
    spec: JobSpec
    files: JobFiles
    handle: JobHandle
    group: _Group
    cpus: float
    memory: int
    time: int
    fork: dict[str, Any] | None = None
    planned: _Allocation | None = None
    losses: int = 0
    cancelled: bool = False
    final: JobStatus | None = None

    @property
    def work(self) -> float:
        return self.cpus * self.time

    def entry(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "dir": str(self.files.directory),
            "script": str(self.files.script),
            "stdout": str(self.files.stdout),
            "stderr": str(self.files.stderr),
            "cpus": self.cpus,
            "memory": self.memory,
            "time": self.time,
            "fork": self.fork,
        }


@attrs.define
class _Group:
    name: str
    directory: Path
    template: ResourceRequest
    labels: dict[str, str]
    allocations: list[_Allocation] = attrs.field(factory=list)

    def live(self) -> list[_Allocation]:
        return [a for a in self.allocations if not a.ended]


class SquashBackend(Backend):
    """A batch backend whose small jobs share allocations run by a launcher.

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
    """

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
    ) -> None:
        super().__init__()
        if policy.mode is not SquashMode.SQUASH:
            raise ValueError(f"SquashBackend needs squash mode, not {policy.mode.value}")
        self.name = inner.name
        self.inner = inner
        self.calls = inner.calls  # one counter: the allocations' sbatch calls are the cost
        self.policy = policy
        self.idle = idle
        self.python = python
        self.max_losses = max_losses
        self.preload = tuple(preload)
        self._forkable = {item.partition(":")[0].split(".")[0] for item in self.preload}
        self._clock = clock
        base = work_dir or getattr(inner, "work_dir", None) or Path.home() / ".seqera" / "jobs"
        self.work_dir = Path(base)
        self.root = self.work_dir / "squash" / uuid.uuid4().hex[:12]
        self._serial = itertools.count(1)
        self._groups: dict[Hashable, _Group] = {}
        self._jobs: dict[str, _Job] = {}
        self._launcher: Path | None = None

    # -- which jobs -------------------------------------------------------------------

    def unsquashable(self, spec: JobSpec) -> str | None:
        """Why ``spec`` runs as its own scheduler job, or None when it can be squashed."""
        return unsquashable(spec.request, self.policy)

    def explain(self, specs: Sequence[JobSpec]) -> list[Decision]:
        """What :meth:`submit` would do with ``specs`` on an empty cluster (a dry run)."""
        return explain(specs, self.policy)

    # -- the Backend contract ----------------------------------------------------------

    def submit(self, jobs: Sequence[JobSpec]) -> list[JobHandle]:
        """Queue the squashable jobs (adding allocations as needed); submit the rest."""
        alone = [(n, spec) for n, spec in enumerate(jobs) if self.unsquashable(spec)]
        handles: dict[int, JobHandle] = {}
        if alone:
            for (n, _), handle in zip(
                alone, self.inner.submit([spec for _, spec in alone]), strict=True
            ):
                handles[n] = handle
        queued: list[_Job] = []
        skip = {n for n, _ in alone}
        for n, spec in enumerate(jobs):
            if n in skip:
                continue
            job = self._new_job(spec)
            self._enqueue(job)
            queued.append(job)
            handles[n] = job.handle
        self._cover(queued)
        return [handles[n] for n in range(len(jobs))]

    def poll(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        """Each job's status from its files, with one native call for every allocation."""
        plain = [h for h in handles if h.native_id not in self._jobs]
        allocations = [a for g in self._groups.values() for a in g.live() if a.handle is not None]
        seen = self.inner.poll(plain + [a.handle for a in allocations if a.handle])
        by_id = {s.handle.native_id: s for s in seen[: len(plain)]}
        for allocation, status in zip(allocations, seen[len(plain) :], strict=True):
            if status.state.finished:
                allocation.ended = True
                allocation.reason = status.reason or status.state.value
        statuses = []
        for handle in handles:
            job = self._jobs.get(handle.native_id)
            if job is None:
                statuses.append(attrs.evolve(by_id[handle.native_id], handle=handle))
                continue
            status = self._job_status(job)
            statuses.append(attrs.evolve(status, handle=handle))
        # lost jobs were requeued; they and any whose planned allocation ended unclaimed
        # need room in a live allocation
        waiting = [job for job in self._jobs.values() if self._uncovered(job)]
        if waiting:
            self._cover(waiting)
        # queued allocations whose jobs others took or that were cancelled: not needed
        idle = [a.handle for a in self._idle_allocations() if a.handle is not None]
        if idle:
            self.inner.cancel(idle)
            for allocation in self._idle_allocations():
                allocation.ended, allocation.reason = True, "not needed"
        return statuses

    def cancel(self, handles: Sequence[JobHandle]) -> None:
        """Cancel jobs: queued ones never start, running ones are killed by their launcher."""
        plain = [h for h in handles if h.native_id not in self._jobs]
        for handle in handles:
            job = self._jobs.get(handle.native_id)
            if job is None or job.final is not None or job.cancelled:
                continue
            job.cancelled = True
            queued = job.group.directory / "queue" / f"{job.key}.json"
            with contextlib.suppress(FileNotFoundError):
                os.rename(queued, job.group.directory / "cancelled" / f"{job.key}.json")
                continue  # taken out of the queue before any launcher claimed it
            (job.group.directory / "cancel" / job.key).touch()
        idle = [a.handle for a in self._idle_allocations() if a.handle is not None]
        if plain or idle:
            self.inner.cancel(plain + idle)

    def logs(self, handle: JobHandle) -> str:
        """The job's stdout so far, then its stderr if kept apart."""
        if handle.native_id not in self._jobs:
            return self.inner.logs(handle)
        paths = dict.fromkeys(p for p in (handle.stdout, handle.stderr) if p)
        return "".join(_text(Path(p)) for p in paths)

    def close(self) -> None:
        """Tell every launcher to end once it has nothing to run, and cancel idle ones."""
        for group in self._groups.values():
            (group.directory / "drain").touch()
        idle = [a.handle for a in self._idle_allocations() if a.handle is not None]
        if idle:
            self.inner.cancel(idle)
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    # -- jobs ----------------------------------------------------------------------------

    def _group(self, spec: JobSpec) -> _Group:
        key = share_key(spec.request, job_labels(spec), self.policy)
        group = self._groups.get(key)
        if group is None:
            directory = self.root / f"group{len(self._groups) + 1}"
            for sub in ("queue", "claimed", "cancel", "cancelled"):
                (directory / sub).mkdir(parents=True, exist_ok=True)
            group = _Group(directory.name, directory, spec.request, dict(job_labels(spec)))
            self._groups[key] = group
        else:  # an allocation carries only the labels all its jobs share
            labels = job_labels(spec)
            group.labels = {k: v for k, v in group.labels.items() if labels.get(k) == v}
        return group

    def _new_job(self, spec: JobSpec) -> _Job:
        group = self._group(spec)
        files = prepare_job(self.work_dir, spec)
        key = f"{next(self._serial):07d}"
        native_id = f"{self.root.name}.{key}"
        handle = JobHandle(self.name, native_id, spec.name, str(files.stdout), str(files.stderr))
        cpus, memory, limit = _shape(spec)
        job = _Job(key, spec, files, handle, group, cpus, memory, limit, self._fork(spec))
        self._jobs[native_id] = job
        return job

    def _fork(self, spec: JobSpec) -> dict[str, Any] | None:
        # python -m MODULE ARGS with this interpreter and a preloaded MODULE: what the
        # job's script would set up, for the launcher's forked child to do instead
        command = spec.command
        if len(command) < 3 or command[1] != "-m" or not self._forkable:
            return None
        if os.path.realpath(command[0]) != os.path.realpath(self.python):
            return None
        if command[2].split(".")[0] not in self._forkable:
            return None
        return {
            "module": command[2],
            "args": list(command[3:]),
            "cwd": spec.workdir,
            "env": job_environment(spec),
        }

    def _enqueue(self, job: _Job) -> None:
        path = job.group.directory / "queue" / f"{job.key}.json"
        partial = path.with_suffix(".part")
        partial.write_text(json.dumps(job.entry()))
        os.replace(partial, path)

    def _job_status(self, job: _Job) -> JobStatus:
        if job.final is not None:
            return job.final
        directory = job.files.directory
        result = _read(directory / "result.json")
        if isinstance(result, dict):
            job.final = _finished(job.handle, result)
            return job.final
        claim = _read(directory / "claim")
        ended = self._allocation_ended(job.group, claim)
        code = _exit_code(directory)
        if code is not None and ended:  # the script ended; its launcher did not live to say more
            job.final = _finished(job.handle, {"exit_code": code})
            return job.final
        if job.cancelled:
            if claim is None or ended:
                job.final = JobStatus(job.handle, JobState.CANCELLED, reason="cancelled")
                return job.final
            return JobStatus(job.handle, JobState.RUNNING, reason="being cancelled")
        if isinstance(claim, dict):
            if not ended:
                job.planned = self._allocation(job.group, claim)  # whoever took it
                return JobStatus(job.handle, JobState.RUNNING)
            allocation = self._allocation(job.group, claim)
            why = allocation.reason if allocation else "ended"
            if job.losses + 1 >= self.max_losses:
                job.final = JobStatus(
                    job.handle,
                    JobState.FAILED,
                    reason=f"its allocation ended before it did, {job.losses + 1} times "
                    f"(last: {why})",
                )
                return job.final
            job.losses += 1
            self._requeue(job)
            return JobStatus(job.handle, JobState.PENDING, reason=f"requeued: allocation {why}")
        return JobStatus(job.handle, JobState.PENDING)

    def _requeue(self, job: _Job) -> None:
        claimed = job.group.directory / "claimed" / f"{job.key}.json"
        with contextlib.suppress(FileNotFoundError):
            os.unlink(job.files.directory / "claim")
        try:
            os.replace(claimed, job.group.directory / "queue" / f"{job.key}.json")
        except FileNotFoundError:
            self._enqueue(job)
        job.planned = None

    def _allocation(self, group: _Group, claim: Mapping[str, Any]) -> _Allocation | None:
        name = claim.get("allocation")
        return next((a for a in group.allocations if a.name == name), None)

    def _allocation_ended(self, group: _Group, claim: Any) -> bool:
        allocation = self._allocation(group, claim) if isinstance(claim, dict) else None
        return allocation is None or allocation.ended

    def _uncovered(self, job: _Job) -> bool:
        # queued, and the allocation planned for it has ended without claiming it
        return (
            job.final is None
            and not job.cancelled
            and (job.planned is None or job.planned.ended)
            and not (job.files.directory / "claim").exists()
        )

    def _idle_allocations(self) -> list[_Allocation]:
        # queued allocations whose jobs have all ended or been cancelled
        busy = {
            id(job.planned)
            for job in self._jobs.values()
            if job.planned is not None and job.final is None and not job.cancelled
        }
        return [
            a
            for g in self._groups.values()
            for a in g.live()
            if id(a) not in busy and not (a.directory / "started").exists()
        ]

    # -- allocations ---------------------------------------------------------------------

    def _cover(self, jobs: Iterable[_Job]) -> None:
        """Plan room for ``jobs`` in live allocations, and submit new ones for the rest."""
        now = self._clock()
        excess: dict[str, list[_Job]] = {}
        room = {id(a): self._room(a, now) for g in self._groups.values() for a in g.live()}
        for job in jobs:
            placed = None
            for allocation in sorted(job.group.live(), key=lambda a: room[id(a)][0]):
                work, slots, remaining = room[id(allocation)]
                if (
                    slots >= 1
                    and work >= job.work
                    and job.cpus <= allocation.cpus
                    and job.memory <= allocation.memory
                    and job.time + _launcher._MARGIN <= remaining
                ):
                    room[id(allocation)] = (work - job.work, slots - 1, remaining)
                    placed = allocation
                    break
            if placed is None:
                excess.setdefault(job.group.name, []).append(job)
            job.planned = placed
        new: list[_Allocation] = []
        for members in excess.values():
            group = members[0].group
            shapes = [(j.cpus, j.memory, j.time) for j in members]
            for placed_jobs in pack(self.policy, shapes):
                allocation = self._new_allocation(group, [members[i] for i in placed_jobs])
                new.append(allocation)
        if new:
            specs = [self._allocation_spec(a) for a in new]
            for allocation, handle in zip(new, self.inner.submit(specs), strict=True):
                allocation.handle = handle

    def _room(self, allocation: _Allocation, now: float) -> tuple[float, int, float]:
        """Unplanned cpu-seconds, job slots and seconds left in a live allocation."""
        remaining = allocation.remaining(now) - _launcher._MARGIN
        planned = [
            j
            for j in self._jobs.values()
            if j.planned is allocation and j.final is None and not j.cancelled
        ]
        work = allocation.cpus * max(remaining, 0.0) - sum(j.work for j in planned)
        return work, self.policy.max_jobs - len(planned), remaining

    def _new_allocation(self, group: _Group, members: Sequence[_Job]) -> _Allocation:
        cpus, memory, limit = allocation_size(
            self.policy, [(j.cpus, j.memory, j.time) for j in members]
        )
        name = f"alloc{len(group.allocations) + 1}"
        directory = group.directory / name
        directory.mkdir()
        allocation = _Allocation(name, group, directory, cpus, memory, limit)
        spec = {"name": name, "cpus": cpus, "memory": memory, "time": limit, "idle": self.idle}
        spec["preload"] = list(self.preload)
        (directory / "allocation.json").write_text(json.dumps(spec))
        group.allocations.append(allocation)
        for job in members:
            job.planned = allocation
        return allocation

    def _allocation_spec(self, allocation: _Allocation) -> JobSpec:
        template = allocation.group.template
        request = ResourceRequest(
            cpus=allocation.cpus,
            memory=allocation.memory,
            time=allocation.time,
            disk=template.disk,
            queue=template.queue,
            account=template.account,
            container=template.container,
            extra=template.extra,
        )
        group, directory = allocation.group.directory, allocation.directory
        return JobSpec(
            name=f"squash-{allocation.group.name}-{allocation.name}",
            command=(self.python, str(self._launcher_path()), str(group), str(directory)),
            request=request,
            workdir=str(allocation.directory),
            labels=allocation.group.labels,
        )

    def _launcher_path(self) -> Path:
        if self._launcher is None:
            # a copy on the shared filesystem: the compute node needs nothing installed
            self.root.mkdir(parents=True, exist_ok=True)
            self._launcher = self.root / "launcher.py"
            shutil.copyfile(_launcher.__file__, self._launcher)
        return self._launcher


def explain(specs: Sequence[JobSpec], policy: SquashPolicy) -> list[Decision]:
    """What a :class:`SquashBackend` would do with ``specs`` on an empty cluster."""
    decisions: dict[int, Decision] = {}
    groups: dict[Hashable, list[tuple[int, JobSpec]]] = {}
    for n, spec in enumerate(specs):
        why = unsquashable(spec.request, policy)
        if why is not None:
            decisions[n] = Decision(spec.name, "alone", why)
            continue
        key = share_key(spec.request, job_labels(spec), policy)
        groups.setdefault(key, []).append((n, spec))
    allocation = 0
    for members in groups.values():
        shapes = [_shape(spec) for _, spec in members]
        for placed in pack(policy, shapes):
            allocation += 1
            cpus, memory, limit = allocation_size(policy, [shapes[i] for i in placed])
            for i in placed:
                n, spec = members[i]
                why = (
                    f"shares allocation {allocation} ({cpus} cores, {memory // MIB} MiB, "
                    f"{limit} s) with {len(placed) - 1} other job(s) of the same "
                    "queue, account, container, options and squash key"
                )
                decisions[n] = Decision(spec.name, "squash", why, allocation)
    return [decisions[n] for n in range(len(specs))]


def allocation_size(
    policy: SquashPolicy, shapes: Sequence[tuple[float, int, int]]
) -> tuple[int, int, int]:
    """Cores, memory and time limit of an allocation for jobs of these shapes."""
    largest = max(math.ceil(c) for c, _, _ in shapes)
    cpus = policy.cpus if policy.cpus is not None else largest
    # as much memory per core as the hungriest job, so every job fits at any moment
    per_core = max(m / c for c, m, _ in shapes)
    memory = math.ceil(per_core * cpus / MIB) * MIB
    memory = max(memory, max(m for _, m, _ in shapes))
    work = sum(c * t for c, _, t in shapes)
    limit = max(max(t for _, _, t in shapes), math.ceil(work / cpus)) + SLACK
    return cpus, memory, min(policy.max_time, math.ceil(limit / 60) * 60)


def pack(policy: SquashPolicy, shapes: Sequence[tuple[float, int, int]]) -> list[list[int]]:
    """Which jobs go together, by the planner: the job indices of each allocation."""
    if not shapes:
        return []
    cpus, memory, _ = allocation_size(policy, shapes)
    span = policy.max_time - SLACK
    # Dimensions: cpu-seconds, byte-seconds and (in the planner's GPU slot) one per job.
    kind = InstanceType("allocation", cpus * span, memory * span, 1.0, policy.max_jobs)
    jobs = [PlannedJob(str(n), c * t, max(1, m * t), 1) for n, (c, m, t) in enumerate(shapes)]
    plan = schedule(Catalogue((kind,)), jobs)
    return sorted(sorted(int(j.name) for j in instance.jobs) for instance in plan.instances)


def _shape(spec: JobSpec) -> tuple[float, int, int]:
    request = spec.request
    if request.time is None:
        raise ValueError(f"job {spec.name!r} has no time limit to squash it by")
    return (request.cpus or 1.0, request.memory or 1, request.time)


def _text(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _exit_code(directory: Path) -> int | None:
    try:
        return int((directory / "exitcode").read_text().strip())
    except (OSError, ValueError):
        return None


def _finished(handle: JobHandle, result: Mapping[str, Any]) -> JobStatus:
    code = result.get("exit_code")
    cancelled = bool(result.get("cancelled"))
    time_limit = bool(result.get("time_limit"))
    if cancelled:
        state, reason = JobState.CANCELLED, "cancelled"
    elif code == 0:
        state, reason = JobState.SUCCEEDED, None
    else:
        state = JobState.FAILED
        reason = "time limit reached" if time_limit else result.get("reason")
        if reason is None and result.get("signal"):
            reason = f"killed by signal {result['signal']}"
    peak = result.get("peak_memory_bytes")
    wall = result.get("wall_seconds")
    return JobStatus(
        handle,
        state,
        exit_code=code if isinstance(code, int) else None,
        reason=reason,
        time_limit=time_limit,
        wall_seconds=float(wall) if isinstance(wall, int | float) else None,
        peak_memory_bytes=int(peak) if isinstance(peak, int) else None,
    )
