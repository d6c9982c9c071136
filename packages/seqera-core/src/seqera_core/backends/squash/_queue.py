"""Which jobs a :class:`~._backend.SquashBackend` knows, and how a squashable job joins
the queue of its group.

A job's group is that of its :func:`~seqera_core.squash.share_key` (one directory under
the backend's root; an allocation carries only the labels all its jobs share). The job
gets its directory and script as a batch job would (``batch.prepare_job``), a key in the
backend's serial order, and an entry for the launcher (the files, its shape, and for
``python -m MODULE`` of a preloaded package with this interpreter, what the launcher's
forked child sets up instead of running the script). The record is written before the
entry is linked into ``queue/``, so a job in the queue is always known to a backend that
restarts; the jobs an earlier backend over the same work directory left are loaded from
its records when one of its handles is polled or cancelled (``_adopt``).
"""

from __future__ import annotations

import os
from collections.abc import Hashable, Iterable, Iterator
from pathlib import Path
from typing import Any

from ...squash import SquashPolicy, share_key
from ..base import Backend, JobHandle, JobSpec
from ..batch import job_environment, job_labels, prepare_job
from . import _protocol as proto
from ._plan import Expected, shape
from ._state import Group, Job, load_root, native_id, parse_native_id, private_dir

__all__ = ["Queueing"]


class Queueing(Backend):
    """The jobs half of :class:`~._backend.SquashBackend`: its groups and jobs, its own
    and adopted, and a new job's way into its group's queue. ``SquashBackend.__init__``
    sets the attributes below; they are read and changed under its lock."""

    policy: SquashPolicy
    python: str
    expected: Expected | None
    work_dir: Path
    root: Path
    _forkable: set[str]  # the top-level packages the launchers preload
    _serial: Iterator[int]
    _groups: dict[Hashable, Group]  # this backend's own, by share key
    _adopted: dict[str, list[Group]]  # an earlier backend's, by its root
    _jobs: dict[str, Job]  # by native id

    def _all_groups(self) -> list[Group]:
        return [*self._groups.values(), *(g for gs in self._adopted.values() for g in gs)]

    def _adopt(self, handles: Iterable[JobHandle]) -> None:
        """Load what an earlier backend over this work directory left, for its handles."""
        for handle in handles:
            parsed = parse_native_id(handle.native_id)
            if handle.native_id in self._jobs or parsed is None:
                continue
            root = parsed[0]
            if root == self.root.name or root in self._adopted:
                continue
            groups, jobs = load_root(self.work_dir / "squash" / root)
            self._adopted[root] = groups
            for job in jobs:
                self._jobs.setdefault(job.handle.native_id, job)

    def _group(self, spec: JobSpec) -> Group:
        key = share_key(spec.request, job_labels(spec), self.policy)
        group = self._groups.get(key)
        if group is None:
            directory = private_dir(self.root) / f"group{len(self._groups) + 1}"
            template = spec.request
            group = Group(directory.name, directory, template, dict(job_labels(spec)))
            group.create()
            self._groups[key] = group
        else:  # an allocation carries only the labels all its jobs share
            labels = job_labels(spec)
            shared = {k: v for k, v in group.labels.items() if labels.get(k) == v}
            if shared != group.labels:
                group.labels = shared
                group.save()
        return group

    def _new_job(self, spec: JobSpec) -> Job:
        group = self._group(spec)
        files = prepare_job(self.work_dir, spec)
        key = f"{next(self._serial):07d}"
        handle = JobHandle(
            self.name, native_id(self.root.name, key), spec.name, str(files.stdout),
            str(files.stderr),
        )  # fmt: skip
        size = shape(spec, self.expected)
        entry = {
            "key": key,
            "dir": str(files.directory),
            "script": str(files.script),
            "stdout": str(files.stdout),
            "stderr": str(files.stderr),
            "cpus": size.cpus,
            "memory": size.memory,
            "time": size.time,
            "fork": self._fork(spec),
        }
        job = Job(key, handle, group, files, entry, size.expected, spec.key)
        self._jobs[handle.native_id] = job
        return job

    def _enqueue(self, job: Job) -> None:
        # The record first, then the same file linked into the queue (one write: the
        # launcher reads the entry's keys and ignores the record's): a job in the queue
        # is always known to a backend that restarts.
        record = job.save(self.root)
        os.link(record, job.group.directory / proto.QUEUE / f"{job.key}.json")

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
