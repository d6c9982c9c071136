"""What a finished job means: its history row, its cause and one phrasing of why it failed.

Every engine reports a failure with :func:`failure_message` and records an attempt with
:func:`finished_record`, so "why did my job fail" reads the same in Snakemake, cwltool,
``seqera run`` and the sidecar, and every row carries every field the engine knew.
"""

from __future__ import annotations

import time

from .backends.base import CAUSES, JobState, JobStatus, job_cause
from .history import TaskRecord
from .models import ResourceRequest
from .units import format_bytes, format_seconds

__all__ = ["cause", "failure_message", "finished_record"]


def cause(status: JobStatus) -> str | None:
    """One of :data:`~seqera_core.history.CAUSES` for a job that did not succeed, else None.

    Out-of-memory and time-limit flags win over what the scheduler called the ending: a
    Slurm ``OUT_OF_MEMORY`` or an ``exit 137`` under ``OverMemoryKill`` is the same cause.
    """
    if status.state is JobState.SUCCEEDED or not status.state.finished:
        return None
    if status.out_of_memory or status.time_limit:
        return job_cause(JobState.FAILED, status.out_of_memory, status.time_limit)
    if status.cause in CAUSES:
        return status.cause
    return job_cause(status.state)  # a status evolved after its cause was set


def finished_record(
    request: ResourceRequest, status: JobStatus, *, run_id: str, engine: str, task_id: str = ""
) -> TaskRecord:
    """The history row of a finished attempt: what it asked for (``request``: cpus, memory,
    time, attempt, input bytes, container) and what the backend measured (``status``).

    ``task_id`` is the engine's own id for the task (the backend's job id when empty).
    """
    return TaskRecord(
        run_id=run_id,
        task_id=task_id or status.handle.native_id,
        process=request.process or "task",
        succeeded=status.state is JobState.SUCCEEDED,
        attempt=request.attempt,
        engine=engine,
        exit_code=status.exit_code,
        out_of_memory=status.out_of_memory,
        time_limit=status.time_limit,
        cpus=request.cpus,
        memory=request.memory,
        time=request.time,
        peak_memory=status.peak_memory_bytes,
        cpu_percent=_cpu_percent(status),
        realtime=status.wall_seconds,
        input_bytes=request.input_bytes,
        container=request.container,
        finished=_ended(status),
        cause=cause(status),
        cpu_time=status.cpu_seconds,
        backend=status.handle.backend,
        route=status.handle.route or "",
    )


def _ended(status: JobStatus) -> float:
    """When the attempt ended: its start plus its run time where the backend knows both
    (so a row recorded late still sits where it ran on the report's timeline), else now."""
    if status.started_at is not None and status.wall_seconds is not None:
        return status.started_at + status.wall_seconds
    return time.time()


def _cpu_percent(status: JobStatus) -> float | None:
    """Nextflow's ``%cpu`` (CPU time over wall time, 100 a core) from what the backend
    measured, so the resolvers that read ``%cpu`` learn from every backend alike."""
    cpu, wall = status.cpu_seconds, status.wall_seconds
    if cpu is None or not wall:
        return None
    return round(100 * cpu / wall, 1)


def failure_message(status: JobStatus, request: ResourceRequest | None = None) -> str:
    """Why a finished job did not succeed, in one line without a final full stop, the same
    for every engine: ``slurm job 42 failed, exit code 137, out of memory (requested 2 GiB),
    killed by SIGKILL``; a job that succeeded reads ``slurm job 42 succeeded``."""
    handle = status.handle
    job = f"{handle.backend} job {handle.native_id}"
    why = cause(status)
    if why is None:
        return f"{job} {status.state.value}"
    parts = [f"{job} {'was cancelled' if why == 'cancelled' else 'failed'}"]
    if status.exit_code is not None:
        parts.append(f"exit code {status.exit_code}")
    if why == "out_of_memory":
        asked = request.memory if request is not None else None
        parts.append("out of memory" + (f" (requested {format_bytes(asked)})" if asked else ""))
    elif why == "time_limit":
        limit = request.time if request is not None else None
        parts.append("time limit" + (f" of {format_seconds(limit)}" if limit else "") + " exceeded")
    elif why == "node_failure":
        parts.append("its node failed")
    elif why == "preempted":
        parts.append("preempted by the scheduler")
    said = {"out_of_memory": "out of memory", "time_limit": "time limit"}.get(why or "")
    reason = status.reason
    # The backend's own words, unless they only repeat the exit code or the cause.
    if reason and f"code {status.exit_code}" not in reason and not (said and said in reason):
        parts.append(reason)
    return ", ".join(parts)
