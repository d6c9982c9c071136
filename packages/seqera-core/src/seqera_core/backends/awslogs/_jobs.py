"""A container job's end, held back until its usage line is read from its log.

The usage wrapper's line (:mod:`._usage`) reaches CloudWatch Logs a moment after the
container has stopped, and the scheduler's own record of the job (ECS DescribeTasks, AWS
Batch DescribeJobs) never carries it. So a job that ran under the wrapper keeps showing
as running ("stopped; reading its usage") once it has ended, until its line is found,
which makes its status final with the peak memory and CPU time, or until ``usage_wait``
seconds have passed, which makes it final without them and says so in a warning: an
unknown usage never fails a job.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import attrs
from attrs import frozen

from ..base import JobHandle, JobState, JobStatus
from ._logs import peaks

__all__ = ["LoggedJob", "UsageLog"]


@attrs.define(eq=False)
class LoggedJob:
    """What a backend keeps of one job whose usage comes from its log; each backend's
    subclass adds what its own service needs (a task's current ARN, a job's stream).

    Mutable on purpose: a job's record changes as polls see it run and end.
    """

    key: str  # the handle's native id
    ended: JobStatus | None = attrs.field(default=None, kw_only=True)  # usage line not yet read
    usage_deadline: float = attrs.field(default=0.0, kw_only=True)
    final: JobStatus | None = attrs.field(default=None, kw_only=True)

    @property
    def name(self) -> str:
        """What a warning calls the job: its key unless the service names it otherwise."""
        return self.key


@frozen
class UsageLog:
    """Where ended jobs' usage lines are, how long to wait for them, and how to say so.

    Attributes:
        client: a boto3 CloudWatch Logs client.
        group: the log group the jobs' containers write to.
        wait: seconds an ended job waits for its line (the settings' ``usage_wait``).
        noun: what a warning calls a job (``ECS task``, ``AWS Batch job``).
        ended: how a waiting job's reason says it ended (``stopped``, ``ended``).
        log: the backend's logger.
    """

    client: Any
    group: str
    wait: float
    noun: str
    ended: str
    log: logging.Logger

    def waiting(self, handle: JobHandle) -> JobStatus:
        """The status of a job that ended and waits for its usage line."""
        return JobStatus(handle, JobState.RUNNING, reason=f"{self.ended}; reading its usage")

    def end(self, job: LoggedJob, final: JobStatus, now: float, *, logged: bool) -> JobStatus:
        """What to report for a job that has just ended with ``final``: that, when no usage
        line will come (``logged`` false: no wrapper, or the job never ran), else a wait."""
        if not logged:
            job.final = final
            return final
        job.ended, job.usage_deadline = final, now + self.wait
        return self.waiting(final.handle)

    def settle(self, streams: Mapping[str, LoggedJob], now: float) -> dict[str, JobStatus]:
        """Statuses, by key, of ended jobs (``streams``: each one's log stream): final once
        their usage line is found (one FilterLogEvents per 100 streams) or given up on."""
        found = peaks(self.client, self.group, list(streams))
        settled: dict[str, JobStatus] = {}
        for stream, job in streams.items():
            assert job.ended is not None
            if stream in found:
                peak, cpu = found[stream]
                job.final = attrs.evolve(job.ended, peak_memory_bytes=peak, cpu_seconds=cpu)
            elif now >= job.usage_deadline:
                self.log.warning("no usage line from %s %s within %s s", self.noun, job.name,
                                 self.wait)  # fmt: skip
                job.final = job.ended
            else:
                settled[job.key] = self.waiting(job.ended.handle)
                continue
            job.ended = None
            settled[job.key] = job.final
        return settled
