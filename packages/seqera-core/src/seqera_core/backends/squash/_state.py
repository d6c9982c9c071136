"""What a :class:`~seqera_core.backends.SquashBackend` knows, kept on disk so that a new
backend over the same work directory (after a crash or a restart of the process that
submitted) can poll, cancel and recover the jobs an earlier one accepted.

Layout, under ``WORK/squash/<root>/`` (one root per backend instance; 0700, every file
0600, since entries hold the jobs' environment):

- ``jobs/<key>.json``: the job's handle, group and launcher entry, written before the job
  is queued; ``<job dir>/losses``: how often its allocation ended under it.
- ``<group>/group.json``: what the group's allocations are submitted with.
- ``<group>/<alloc>/allocation.json`` (the launcher's spec), ``handle.json`` (the
  scheduler's job, written as soon as it is known) and ``ended.json``.

A job's state is read from the group's ``queue/`` and ``claimed/`` listings and its own
``result.json``/``exitcode`` (the protocol of ``_protocol.py``), never from memory alone.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

from ...models import ResourceRequest
from ..base import JobHandle, JobStatus
from ..batch import JobFiles
from . import _protocol as proto

__all__ = [
    "Allocation", "Group", "Job", "find_records", "load_root", "native_id", "parse_native_id",
    "read_json",
]  # fmt: skip

_NATIVE = re.compile(r"squash\.([0-9a-f]{12})\.(\d{7})")
JOBS = "jobs"
GROUP = "group.json"
HANDLE = "handle.json"
ENDED = "ended.json"
LOSSES = "losses"


def native_id(root: str, key: str) -> str:
    """The native id of job ``key`` of backend root ``root``."""
    return f"squash.{root}.{key}"


def parse_native_id(value: str) -> tuple[str, str] | None:
    """``(root, key)`` of a squashed job's native id, or None for a scheduler's own id."""
    match = _NATIVE.fullmatch(value)
    return (match[1], match[2]) if match else None


def private_dir(path: Path) -> Path:
    """``path`` as a directory only its owner can enter."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    return path


def read_json(path: Path) -> Any:
    """``path``'s JSON, or None while it is missing, half written or unreadable."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _handle(data: Any) -> JobHandle | None:
    if not isinstance(data, Mapping) or not data.get("native_id"):
        return None
    return JobHandle(
        str(data["backend"]),
        str(data["native_id"]),
        str(data.get("name") or ""),
        data.get("stdout"),
        data.get("stderr"),
    )


def _handle_data(handle: JobHandle) -> dict[str, Any]:
    return attrs.asdict(handle)


@attrs.define(eq=False)
class Group:
    """Jobs that may share allocations (one share key), and their allocations."""

    name: str
    directory: Path
    template: ResourceRequest
    labels: dict[str, str]
    allocations: list[Allocation] = attrs.field(factory=list)

    def live(self) -> list[Allocation]:
        return [a for a in self.allocations if not a.ended]

    def allocation(self, name: str) -> Allocation | None:
        return next((a for a in self.allocations if a.name == name), None)

    def create(self) -> None:
        private_dir(self.directory)
        for sub in proto.GROUP_DIRS:
            private_dir(self.directory / sub)
        self.save()

    def save(self) -> None:
        t = self.template
        template: dict[str, Any] = {"disk": t.disk, "queue": t.queue, "account": t.account}
        template |= {"container": t.container, "extra": dict(t.extra)}
        data = {"name": self.name, "template": template, "labels": self.labels}
        proto.write_private(self.directory / GROUP, data)

    def listing(self) -> tuple[set[str], dict[str, str]]:
        """The keys in ``queue/``, and the claimed keys with the allocation holding each."""
        queued = {p[: -len(".json")] for p in _names(self.directory / proto.QUEUE)}
        claimed: dict[str, str] = {}
        for name in _names(self.directory / proto.CLAIMED):
            parsed = proto.parse_claimed(name)
            if parsed is not None:
                claimed[parsed[0]] = parsed[1]
        return queued, claimed


def _names(directory: Path) -> list[str]:
    try:
        return [n for n in os.listdir(directory) if n.endswith(".json")]
    except FileNotFoundError:
        return []


@attrs.define(eq=False)
class Allocation:
    """One scheduler job running the launcher for a group."""

    name: str
    group: Group
    directory: Path
    cpus: int
    memory: int
    time: int
    handle: JobHandle | None = None
    ended: bool = False
    reason: str | None = None
    started_at: float | None = None

    def remaining(self, now: float) -> float:
        if self.started_at is None:
            started = read_json(self.directory / proto.STARTED)
            if not isinstance(started, dict):
                return float(self.time)  # still queued: its whole time limit is ahead
            self.started_at = float(started.get("time", now))
        return self.started_at + self.time - now

    @property
    def started(self) -> bool:
        return self.started_at is not None or (self.directory / proto.STARTED).exists()

    def create(self, spec: Mapping[str, Any]) -> None:
        private_dir(self.directory)
        proto.write_private(self.directory / proto.ALLOCATION, dict(spec))

    def submitted(self, handle: JobHandle) -> None:
        self.handle = handle
        proto.write_private(self.directory / HANDLE, _handle_data(handle))

    def end(self, reason: str) -> None:
        self.ended, self.reason = True, reason
        proto.write_private(self.directory / ENDED, {"reason": reason})


@attrs.define(eq=False)
class Job:
    """One squashed job: its handle, launcher entry and what is known of its state."""

    key: str
    handle: JobHandle
    group: Group
    files: JobFiles
    entry: dict[str, Any]
    expected: float
    submission: str | None = None  # the caller's key (JobSpec.key), for find()
    planned: Allocation | None = None
    losses: int = 0
    cancelled: bool = False
    final: JobStatus | None = None
    last: JobStatus | None = None

    @property
    def cpus(self) -> float:
        return float(self.entry["cpus"])

    @property
    def memory(self) -> int:
        return int(self.entry["memory"])

    @property
    def time(self) -> int:
        return int(self.entry["time"])

    @property
    def work(self) -> float:
        return self.cpus * self.expected

    def save(self, root: Path) -> Path:
        """Write the job's record: its launcher entry, with its handle, group and expected
        run time beside the entry's keys; the path written."""
        data: dict[str, Any] = {"handle": _handle_data(self.handle), "group": self.group.name}
        data |= {"expected": self.expected, "submission": self.submission, **self.entry}
        path = private_dir(root / JOBS) / f"{self.key}.json"
        proto.write_private(path, data)
        return path

    def lost(self) -> None:
        self.losses += 1
        proto.write_private(self.files.directory / LOSSES, self.losses)


def load_root(root: Path) -> tuple[list[Group], list[Job]]:
    """The groups and jobs an earlier backend left under ``root``."""
    groups: dict[str, Group] = {}
    for path in sorted(root.glob(f"*/{GROUP}")):
        data = read_json(path)
        if not isinstance(data, dict):
            continue
        template = ResourceRequest(**(data.get("template") or {}))
        group = Group(str(data["name"]), path.parent, template, dict(data.get("labels") or {}))
        for spec_path in sorted(path.parent.glob(f"*/{proto.ALLOCATION}")):
            allocation = _allocation(group, spec_path)
            if allocation is not None:
                group.allocations.append(allocation)
        groups[group.name] = group
    jobs = []
    for path in sorted((root / JOBS).glob("*.json")):
        data = read_json(path)
        if not isinstance(data, dict) or data.get("group") not in groups:
            continue
        group = groups[data.pop("group")]
        handle = _handle(data.pop("handle", None))
        expected = data.pop("expected", None)
        submission = data.pop("submission", None)
        entry = data
        if handle is None or not isinstance(expected, int | float):
            continue
        files = JobFiles(
            Path(entry["dir"]), Path(entry["script"]), Path(entry["stdout"]), Path(entry["stderr"])
        )
        job = Job(path.stem, handle, group, files, entry, float(expected), submission)
        losses = read_json(files.directory / LOSSES)
        job.losses = losses if isinstance(losses, int) else 0
        group_dir = job.group.directory
        job.cancelled = (group_dir / proto.CANCEL / job.key).exists() or (
            group_dir / proto.CANCELLED / f"{job.key}.json"
        ).exists()
        jobs.append(job)
    return list(groups.values()), jobs


def find_records(squash_dir: Path, keys: Iterable[str]) -> dict[str, JobHandle]:
    """The handles of the squashed jobs whose records (under every backend's root in
    ``squash_dir``) carry these caller keys. A record is written before its job enters a
    queue, so a key without one never reached a launcher."""
    wanted = set(keys)
    found: dict[str, JobHandle] = {}
    for path in sorted(squash_dir.glob(f"*/{JOBS}/*.json")):
        data = read_json(path)
        if not isinstance(data, dict) or data.get("submission") not in wanted:
            continue
        handle = _handle(data.get("handle"))
        if handle is not None:
            found[str(data["submission"])] = handle
    return found


def _allocation(group: Group, path: Path) -> Allocation | None:
    spec = read_json(path)
    if not isinstance(spec, dict):
        return None
    directory = path.parent
    allocation = Allocation(
        str(spec["name"]),
        group,
        directory,
        int(spec["cpus"]),
        int(spec["memory"]),
        int(spec["time"]),
    )
    allocation.handle = _handle(read_json(directory / HANDLE))
    ended = read_json(directory / ENDED)
    if isinstance(ended, dict):
        allocation.ended, allocation.reason = True, str(ended.get("reason") or "ended")
    elif allocation.handle is None:
        # Submitted, or not, when the earlier backend stopped: its launcher says which
        # scheduler job it is once it starts; until then nothing can be polled.
        started = read_json(directory / proto.STARTED)
        job_id = started.get("job_id") if isinstance(started, dict) else None
        if job_id:
            allocation.handle = JobHandle(spec.get("backend", ""), str(job_id))
        else:
            allocation.ended, allocation.reason = True, "never known to the scheduler"
    return allocation
