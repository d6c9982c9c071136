"""What the ECS and AWS Batch benchmarks share: every job submitted in one call, then
polled until all have finished, each poll's describe calls held against the backend's
target of ceil(active / 100) (DescribeTasks and DescribeJobs take up to 100 ids)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from attrs import frozen

from seqera_core.backends import Backend, JobSpec, JobStatus

__all__ = ["Polled", "submit_and_poll"]


@frozen
class Polled:
    """What one submission and its polls took.

    Attributes:
        statuses: every job's last status.
        polls: (active jobs, describe calls) of each poll.
        missed: the polls whose describe calls were off ceil(active / 100).
        started, submitted, finished: monotonic clock readings before the submission,
            after it, and once every job had finished.
    """

    statuses: list[JobStatus]
    polls: list[tuple[int, int]]
    missed: int
    started: float
    submitted: float
    finished: float


def submit_and_poll(backend: Backend, jobs: Sequence[JobSpec], describe: str) -> Polled:
    """Submit ``jobs`` and poll them until all have finished, counting ``describe`` calls."""
    started = time.monotonic()
    handles = backend.submit(jobs)
    submitted = time.monotonic()
    statuses: list[JobStatus] = []
    polls: list[tuple[int, int]] = []
    missed, active = 0, len(handles)
    while active:
        before = backend.calls[describe]
        statuses = backend.poll(handles)
        calls = backend.calls[describe] - before
        polls.append((active, calls))
        missed += calls != math.ceil(active / 100)
        active = sum(not s.state.finished for s in statuses)
    return Polled(statuses, polls, missed, started, submitted, time.monotonic())
