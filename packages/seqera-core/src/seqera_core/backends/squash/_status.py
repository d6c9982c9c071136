"""What a squashed job's files say about it, and the backend's half of the recovery
protocol of ``_protocol.py``: a job claimed by an allocation that the scheduler reports
ended, with neither ``result.json`` nor ``exitcode``, goes back to the queue; a job whose
script recorded its exit code is finished, whatever happened to its launcher.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..base import JobHandle, JobState, JobStatus
from . import _protocol as proto
from ._state import Job, read_json

__all__ = ["exit_code", "finished", "look"]


def look(job: Job, queued: set[str], claimed: Mapping[str, str], max_losses: int) -> JobStatus:
    """The state of ``job`` from its files and the group's listings (``queued`` is
    updated when the job goes back to the queue)."""
    directory = job.group.directory
    owner = claimed.get(job.key)
    if job.key in queued:
        if job.cancelled:
            with contextlib.suppress(FileNotFoundError):
                os.rename(
                    directory / proto.QUEUE / f"{job.key}.json",
                    directory / proto.CANCELLED / f"{job.key}.json",
                )
                return JobStatus(job.handle, JobState.CANCELLED, reason="cancelled")
        return JobStatus(job.handle, JobState.PENDING)
    result = read_json(job.files.directory / proto.RESULT)
    if isinstance(result, dict):  # written before the claim goes: trust it first
        return finished(job.handle, result)
    if owner is None:
        if job.cancelled and (directory / proto.CANCELLED / f"{job.key}.json").exists():
            return JobStatus(job.handle, JobState.CANCELLED, reason="cancelled")
        # between the two listings a launcher claimed it: as last seen
        return job.last or JobStatus(job.handle, JobState.PENDING)
    allocation = job.group.allocation(owner)
    if allocation is not None and not allocation.ended:
        job.planned = allocation  # whoever took it
        if job.cancelled:
            return JobStatus(job.handle, JobState.RUNNING, reason="being cancelled")
        return JobStatus(job.handle, JobState.RUNNING)
    # its allocation is gone: the launcher will never write more for this job
    mine = directory / proto.CLAIMED / proto.claimed_name(job.key, owner)
    code = exit_code(job.files.directory)
    if code in proto.INTERRUPTED:  # killed with its allocation: it did not finish
        with contextlib.suppress(FileNotFoundError):
            os.unlink(job.files.directory / proto.EXIT_CODE)
        code = None
    if code is not None:  # the job ended; its launcher did not live to say so
        _release(mine, directory / proto.CANCELLED / f"{job.key}.json")
        return finished(job.handle, {"exit_code": code})
    if job.cancelled:
        _release(mine, directory / proto.CANCELLED / f"{job.key}.json")
        return JobStatus(job.handle, JobState.CANCELLED, reason="cancelled")
    why = (allocation.reason if allocation else None) or "ended"
    if job.losses + 1 >= max_losses:
        _release(mine, directory / proto.CANCELLED / f"{job.key}.json")
        return JobStatus(
            job.handle,
            JobState.FAILED,
            reason=f"its allocation ended before it did, {job.losses + 1} times (last: {why})",
        )
    job.lost()
    with contextlib.suppress(FileNotFoundError):
        os.unlink(job.files.directory / proto.CLAIM)
    _release(mine, directory / proto.QUEUE / f"{job.key}.json")
    queued.add(job.key)  # covered with the rest of this poll's waiting jobs
    job.planned = None
    return JobStatus(job.handle, JobState.PENDING, reason=f"requeued: allocation {why}")


def _release(claimed: Path, to: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.replace(claimed, to)


def exit_code(directory: Path) -> int | None:
    try:
        return int((directory / proto.EXIT_CODE).read_text().strip())
    except (OSError, ValueError):
        return None


def finished(handle: JobHandle, result: Mapping[str, Any]) -> JobStatus:
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
    cpu = result.get("cpu_seconds")  # the launcher's wait4 rusage, user + system
    started = result.get("started")
    return JobStatus(
        handle,
        state,
        exit_code=code if isinstance(code, int) else None,
        reason=reason,
        time_limit=time_limit,
        wall_seconds=float(wall) if isinstance(wall, int | float) else None,
        peak_memory_bytes=int(peak) if isinstance(peak, int) else None,
        cpu_seconds=float(cpu) if isinstance(cpu, int | float) else None,
        started_at=float(started) if isinstance(started, int | float) else None,
        out_of_memory=bool(result.get("out_of_memory")),  # the kernel's OOM kill, in its cgroup
    )
