"""One job of the local backend as its monitor thread sees it, and how it ended."""

from __future__ import annotations

import contextlib
import math
import os
import re
import signal
import subprocess
from pathlib import Path

import attrs

from ..base import JobHandle, JobSpec, JobState, JobStatus
from ._records import Recovered

__all__ = ["LocalJob", "adopt", "file_name", "order", "outcome", "restore"]

_NOT_FILE_NAME = re.compile(r"[^A-Za-z0-9._-]", re.ASCII)


@attrs.define(eq=False)
class LocalJob:
    # Mutable on purpose: the monitor thread moves it through its life, always under the lock.
    handle: JobHandle
    spec: JobSpec
    cpus: int
    memory: int
    process: subprocess.Popen[bytes] | None = None
    pid: int = 0
    pidfd: int | None = None
    baseline_rss: int = 0
    started: float | None = None
    ended: float | None = None
    kill_at: float | None = None
    killed: bool = False
    state: JobState = JobState.PENDING
    exit_code: int | None = None
    reason: str | None = None
    time_limit: bool = False
    out_of_memory: bool = False
    cancelled: bool = False
    peak: int = 0
    cpu: float | None = None  # CPU seconds: the larger of /proc's samples and wait4's rusage
    adopted: bool = False  # started by an earlier backend: not our child
    started_wall: float | None = None
    forked: bool = False  # a child of the fork server, not of this process
    cgroup: Path | None = None  # its own memory cgroup, where the kernel enforces the limit
    gone_at: float | None = None  # when an adopted leader was first seen ended (a zombie)
    reported: bool = False  # a poll reported it finished: its record can go at close

    @classmethod
    def of(cls, handle: JobHandle, spec: JobSpec) -> LocalJob:
        """A queued job: its cores whole (as ``dialects.local`` reports them)."""
        return cls(handle, spec, math.ceil(spec.request.cpus or 1), spec.request.memory or 0)

    @property
    def deadline(self) -> float | None:
        time_limit = self.spec.request.time
        return None if self.started is None or time_limit is None else self.started + time_limit

    def status(self, now: float) -> JobStatus:
        """What a poll reports of it."""
        wall = None
        if self.started is not None:
            wall = (self.ended if self.ended is not None else now) - self.started
        return JobStatus(
            self.handle,
            self.state,
            exit_code=self.exit_code,
            reason=self.reason,
            out_of_memory=self.out_of_memory,
            time_limit=self.time_limit,
            wall_seconds=wall,
            peak_memory_bytes=self.peak or None,
            cpu_seconds=None if self.cpu is None else round(self.cpu, 3),
            started_at=self.started_wall,
        )


def adopt(found: Recovered, now: float, wall: float) -> LocalJob:
    """A job an earlier backend recorded, as this one takes it back: queued again, running
    (its start on this process's clock, its pidfd if it still has one), or finished."""
    job = LocalJob.of(found.handle, found.spec)
    if found.kind == "running":
        job.adopted, job.pid, job.state = True, found.pid, JobState.RUNNING
        job.started_wall = found.started_wall or wall
        job.started = now - (wall - job.started_wall)
        with contextlib.suppress(OSError):
            job.pidfd = os.pidfd_open(found.pid)
    elif found.kind != "queued":
        restore(job, found, now)
    return job


def order(native_id: str) -> tuple[str, int]:
    instance, _, count = native_id.partition(".")
    return instance, int(count) if count.isdigit() else 0


def restore(job: LocalJob, found: Recovered, now: float) -> None:
    """A finished job as recorded: its backend's own account, else the wrapper's status."""
    final = found.final
    if final is not None:
        job.state, job.exit_code, job.reason = (
            JobState(final["state"]),
            final["exit_code"],
            final["reason"],
        )
        job.out_of_memory, job.time_limit = final["out_of_memory"], final["time_limit"]
        job.peak = final.get("peak") or 0
        job.cpu = final.get("cpu")
        wall = final.get("wall")
    else:
        code = found.exit_code
        if code is None:
            job.state, job.reason = (
                JobState.FAILED,
                ("ended with no exit status (killed by a signal) while no backend was watching"),
            )
        else:
            job.state, job.exit_code, job.reason = outcome(job, code)
        ended, started = found.ended_wall, found.started_wall
        wall = None if ended is None or started is None else max(0.0, ended - started)
    if wall is not None:
        job.started, job.ended = now - wall, now


def file_name(name: str) -> str:
    return _NOT_FILE_NAME.sub("_", name)[:64] or "job"


def outcome(job: LocalJob, code: int) -> tuple[JobState, int, str | None]:
    reason = None
    if code < 0:
        reason = f"killed by {signal.Signals(-code).name}"
        code = 128 - code
    elif code:
        reason = f"exited with code {code}"
    if job.cancelled:
        return JobState.CANCELLED, code, "cancelled"
    if job.out_of_memory:
        memory = job.spec.request.memory
        return JobState.FAILED, code, f"out of memory: used more than the {memory} bytes requested"
    if job.time_limit:
        limit = job.spec.request.time
        return JobState.FAILED, code, f"time limit of {limit} s exceeded"
    return (JobState.SUCCEEDED if code == 0 else JobState.FAILED), code, reason
