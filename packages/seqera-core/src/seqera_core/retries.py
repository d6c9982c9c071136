"""What the next attempt of a failed task needs, from how the last one ended.

The rules, the same for every engine and backend, with or without a history:

- killed for memory: at least twice the memory the failed attempt had (Nextflow's
  idiom ``memory { 2.GB * task.attempt }``; what snakemake-executor-plugin-slurm's users
  ask for in its issue #348), and never less than what the task declared;
- killed at its time limit: at least twice the time it had, never less than declared;
- its node failed or it was preempted: the same size again (the task did nothing wrong);
- any other failure (the command's own exit code, a cancel): nothing is raised.

The history's right-sizer answers on top (its ``failed_at`` learns from the recorded
failure); the engine's answer is the larger of the two, capped by the task's resource
limits and the queue's as any value is.

"Never a gate": an attempt a resolver sized *below* what the task declared that then
ran out of memory (or time) was failed by the optimiser, not by the task; it is
:func:`rescued` (sent again at once, at no less than its declared size, whatever the
engine's own retry setting), once per task.
"""

from __future__ import annotations

import math

from attrs import frozen

from .backends.base import JobStatus
from .causes import NODE_FAILURE, OUT_OF_MEMORY, PREEMPTED, TIME_LIMIT
from .models import ResourceRequest
from .units import format_bytes, format_seconds

__all__ = ["GROWTH", "Failure", "rescued"]

#: A retry after a memory or time-limit kill gets at least this multiple of what failed.
GROWTH = 2.0


@frozen
class Failure:
    """A task's last failed attempt: what it declared, what it was given, how it ended."""

    declared: ResourceRequest
    given: ResourceRequest
    status: JobStatus
    #: Whether this failure's task was already sent again once by :func:`rescued`.
    rescued: bool = False

    def floor(self) -> dict[str, float | int]:
        """The least each value of the next attempt may have (empty: nothing to raise)."""
        cause = self.status.cause
        if cause == OUT_OF_MEMORY and self.given.memory is not None:
            return {"memory": max(_grown(self.given.memory), self.declared.memory or 0)}
        if cause == TIME_LIMIT and self.given.time is not None:
            return {"time": max(_grown(self.given.time), self.declared.time or 0)}
        if cause in (NODE_FAILURE, PREEMPTED):
            same = {k: getattr(self.given, k) for k in ("cpus", "memory", "time")}
            return {k: v for k, v in same.items() if v is not None}
        return {}

    def note(self) -> str | None:
        """What the next attempt is given and why, for the engine's log (None: nothing)."""
        floor, cause = self.floor(), self.status.cause
        if "memory" in floor and cause == OUT_OF_MEMORY:
            had = format_bytes(self.given.memory or 0)
            return f"out of memory at {had}: memory at least {format_bytes(int(floor['memory']))}"
        if "time" in floor and cause == TIME_LIMIT:
            had = format_seconds(self.given.time or 0)
            return f"time limit at {had}: time at least {format_seconds(int(floor['time']))}"
        if floor:
            return f"{str(cause).replace('_', ' ')}: the same resources again"
        return None


def _grown(value: int) -> int:
    return math.ceil(value * GROWTH)


def rescued(failure: Failure) -> bool:
    """Whether the optimiser, not the task, failed this attempt: a resolver gave it less
    memory (or time) than it declared and it was killed for exactly that. Such a task is
    sent again at once at no less than its declared size, once."""
    if failure.rescued:
        return False
    cause, given, declared = failure.status.cause, failure.given, failure.declared
    if cause == OUT_OF_MEMORY:
        return _below(given.memory, declared.memory)
    if cause == TIME_LIMIT:
        return _below(given.time, declared.time)
    return False


def _below(given: int | None, declared: int | None) -> bool:
    return given is not None and declared is not None and given < declared
