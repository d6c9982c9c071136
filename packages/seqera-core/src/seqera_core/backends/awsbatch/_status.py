"""What one DescribeJobs entry says about a job, as a pure function of the entry.

Job states, AWS Batch User Guide, "Job states": SUBMITTED (accepted, not yet evaluated),
PENDING (waiting for dependencies), RUNNABLE (waiting for capacity: a job that no
compute environment can hold stays here for ever), STARTING (container being created),
RUNNING, then SUCCEEDED (exit code 0) or FAILED (every attempt failed, or terminated).

How a failure reads (same guide, "Troubleshooting"; API reference ``ContainerDetail``):

- out of memory: the container's ``reason`` starts ``OutOfMemoryError: Container killed
  due to memory usage`` (exit code 137);
- time limit: ``statusReason`` ``Job attempt duration exceeded timeout``;
- Spot reclaim: ``statusReason`` ``Host EC2 (instance i-...) terminated.``, retried by the
  job's ``retryStrategy`` while attempts remain;
- TerminateJob/CancelJob: FAILED with the ``reason`` the caller gave as ``statusReason``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs
from attrs import frozen

from ..base import CANCELLED, OTHER, OUT_OF_MEMORY, PREEMPTED, TIME_LIMIT, JobState

__all__ = ["BATCH_STATES", "CANCEL_REASON", "Seen", "seen"]

BATCH_STATES: dict[str, JobState] = {
    "SUBMITTED": JobState.PENDING,
    "PENDING": JobState.PENDING,
    "RUNNABLE": JobState.PENDING,
    "STARTING": JobState.PENDING,
    "RUNNING": JobState.RUNNING,
    "SUCCEEDED": JobState.SUCCEEDED,
    "FAILED": JobState.FAILED,
}
#: The ``reason`` TerminateJob is given, so a cancelled job reads as cancelled.
CANCEL_REASON = "cancelled by seqera"
_OOM = re.compile(r"OutOfMemoryError|out of memory", re.IGNORECASE)
_TIMEOUT = re.compile(r"attempt duration exceeded timeout", re.IGNORECASE)
_SPOT = re.compile(r"^Host EC2|spot", re.IGNORECASE)


@frozen
class Seen:
    """A job as DescribeJobs reports it, in common terms."""

    state: JobState
    exit_code: int | None = None
    reason: str | None = None
    cause: str | None = None
    started_at: float | None = None  # seconds since the epoch
    stopped_at: float | None = None
    log_stream: str | None = None
    attempts: int = 0


def _seconds(value: Any) -> float | None:
    # Batch times are milliseconds since the epoch; 0 (moto's "never") means not yet.
    return value / 1000 if isinstance(value, int | float) and value > 0 else None


def seen(job: Mapping[str, Any]) -> Seen:
    """The common view of one ``jobs[]`` entry of a DescribeJobs response."""
    status = str(job.get("status", ""))
    state = BATCH_STATES.get(status, JobState.UNKNOWN)
    container: Mapping[str, Any] = job.get("container") or {}
    attempts = job.get("attempts") or []
    last: Mapping[str, Any] = (attempts[-1].get("container") or {}) if attempts else {}
    stream = container.get("logStreamName") or last.get("logStreamName")
    started = _seconds(job.get("startedAt"))
    base = Seen(state, started_at=started, log_stream=stream, attempts=len(attempts))
    if not state.finished:
        reason = None if status in BATCH_STATES else f"Batch status {status or '(none)'}"
        if status == "RUNNABLE":
            reason = "RUNNABLE: waiting for capacity in the queue's compute environments"
        return attrs.evolve(base, reason=reason)
    base = attrs.evolve(base, stopped_at=_seconds(job.get("stoppedAt")))
    code = container.get("exitCode", last.get("exitCode"))
    exit_code = int(code) if isinstance(code, int) else None
    if state is JobState.SUCCEEDED:
        return attrs.evolve(base, exit_code=0 if exit_code is None else exit_code)
    status_reason = str(job.get("statusReason") or "")
    container_reason = str(container.get("reason") or last.get("reason") or "")
    reason = "; ".join(r for r in (status_reason, container_reason) if r) or None
    if status_reason.startswith(CANCEL_REASON):
        return attrs.evolve(
            base, state=JobState.CANCELLED, exit_code=exit_code, reason=reason, cause=CANCELLED
        )
    if _OOM.search(container_reason) or _OOM.search(status_reason):
        cause = OUT_OF_MEMORY
    elif _TIMEOUT.search(status_reason):
        cause = TIME_LIMIT
    elif _SPOT.search(status_reason):
        cause = PREEMPTED
    else:
        cause = OTHER
    why = reason or f"exit code {exit_code}"
    return attrs.evolve(base, state=JobState.FAILED, exit_code=exit_code, reason=why, cause=cause)
