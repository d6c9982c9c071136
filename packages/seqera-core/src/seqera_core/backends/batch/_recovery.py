"""Retries that act on the cause, decided the same way for every batch scheduler.

A job that ended in a node failure is sent again once, with the same resources and the
node excluded where the scheduler can exclude one; a preempted one up to three times
as it was. Neither uses an engine attempt: the backend keeps the engine's handle and
reports the latest run. Out-of-memory and time-limit kills are not retried here: they go
back to the engine, whose own retry (and the right-sizer) asks for more.

After a crash, :func:`latest_run` tells which run of a job a new process adopts: the
latest submission the scheduler lists under the job's key, or the run whose id the job's
script marked on starting (``_jobdir.started_id``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import attrs
from attrs import frozen

from ..base import NODE_FAILURE, PREEMPTED, JobSpec, JobState, JobStatus
from ._jobdir import JobFiles, KeyRecord, started_id, submission_key

__all__ = ["RESUBMIT_LIMITS", "Next", "Sent", "latest_run", "next_submission", "resubmitted"]

# How often poll() sends a job again by itself, per cause.
RESUBMIT_LIMITS: Mapping[str, int] = {NODE_FAILURE: 1, PREEMPTED: 3}


@frozen
class Sent:
    """What the backend needs to send a job again: its spec, files and what it did so far."""

    spec: JobSpec
    files: JobFiles
    resubmissions: Counter[str] = attrs.field(factory=Counter, eq=False)
    excluded: tuple[str, ...] = ()


@frozen
class Next:
    """The next submission of a job: its key, the nodes to avoid, and its number."""

    key: str
    excluded: tuple[str, ...]
    count: int


def next_submission(job: Sent, status: JobStatus) -> Next | None:
    """Whether a finished job is sent again, and how; counts it in ``job`` if so."""
    cause = status.cause
    if cause is None or cause not in RESUBMIT_LIMITS:
        return None
    if job.resubmissions[cause] >= RESUBMIT_LIMITS[cause]:
        return None
    job.resubmissions[cause] += 1
    count = sum(job.resubmissions.values())
    excluded = job.excluded
    if cause == NODE_FAILURE and status.node:
        excluded = tuple(dict.fromkeys((*excluded, *status.node.split(","))))
    return Next(submission_key(job.files.directory, count), excluded, count)


def resubmitted(status: JobStatus, new_id: str, count: int) -> JobStatus:
    """The status an engine sees for a job just sent again: pending, and why."""
    cause = (status.cause or "").replace("_", " ")
    where = f" on {status.node}" if status.node else ""
    return JobStatus(
        status.handle,
        JobState.PENDING,
        reason=f"{cause}{where}: sent again as job {new_id}",
        node=status.node,
        resubmissions=count,
    )


def latest_run(listed: Mapping[str, str], record: KeyRecord) -> str | None:
    """The scheduler's id of the latest run of the job (or array) ``record`` went out as:
    ``listed`` maps submission keys to ids; a resubmission's key ends in ``-r<n>``."""
    key = submission_key(record.sent_as)
    found = listed.get(key)
    # at most every cause's limit of resubmissions; the latest the listing knows wins
    for count in range(1, sum(RESUBMIT_LIMITS.values()) + 1):
        found = listed.get(submission_key(record.sent_as, count), found)
    return found or started_id(record.sent_as)
