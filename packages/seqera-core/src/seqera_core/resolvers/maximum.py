"""The per-process-maximum resolver: what a process used before, plus a margin.

Memory is the largest peak of any successful attempt times ``margin``, never below
``floor_memory``; time the longest run time times ``margin``, never below ``floor_time``;
cpus the most cores ever kept busy (``%cpu`` / 100) times ``margin``, never above what the
task declared. A retry after an out-of-memory (time-limit) kill gets at least
``escalation`` times the allocation that failed, and never less than the task declared.
Resource limits and queue caps are applied by the chain afterwards.
"""

from __future__ import annotations

import math

from ..history import History
from ..models import ResourceRequest, ResourceResponse
from ..units import GIB, MIB
from .base import Resolver

__all__ = ["MaximumResolver"]


class MaximumResolver(Resolver):
    """Sizes a task from its process's history; no opinion on a process never seen."""

    name = "maximum"
    priority = 50

    @property
    def inline(self) -> bool:  # type: ignore[override]
        """Called without a thread when the history is local (a PostgreSQL one may wait)."""
        return self.history.local

    def __init__(
        self,
        history: History,
        *,
        margin: float = 1.2,
        escalation: float = 2.0,
        min_runs: int = 1,
        floor_memory: int = 64 * MIB,
        floor_time: int = 60,
        default_disk: int = 10 * GIB,
    ) -> None:
        if margin < 1 or escalation <= 1:
            raise ValueError("margin must be >= 1 and escalation > 1")
        self.history = history
        self.margin = margin
        self.escalation = escalation
        self.min_runs = min_runs
        self.floor_memory = floor_memory
        self.floor_time = floor_time
        self.default_disk = default_disk

    def resolve(self, request: ResourceRequest) -> ResourceResponse | None:
        """Effective resources from the process's history, or ``None`` without enough of it."""
        if not request.process:
            return None
        stats = self.history.stats(request.process)
        if stats is None:
            return None
        retry = request.attempt > 1
        seen = stats.runs >= self.min_runs
        if not seen and not (retry and (stats.out_of_memory or stats.time_limit)):
            return None
        memory = request.memory
        if seen and stats.peak_memory:
            memory = max(math.ceil(stats.peak_memory * self.margin), self.floor_memory)
        time = request.time
        if seen and stats.realtime:
            time = max(math.ceil(stats.realtime * self.margin), self.floor_time)
        cpus = request.cpus
        if seen and stats.cpu_percent:
            used = max(1, math.ceil(stats.cpu_percent / 100 * self.margin))
            cpus = used if cpus is None else min(cpus, used)
        if retry and stats.out_of_memory and stats.failed_memory:
            memory = max(memory or 0, math.ceil(stats.failed_memory * self.escalation))
            memory = max(memory, request.memory or 0)
        if retry and stats.time_limit and stats.failed_time:
            time = max(time or 0, math.ceil(stats.failed_time * self.escalation))
            time = max(time, request.time or 0)
        return ResourceResponse(
            cpus=cpus or 1,
            memory=memory or self.floor_memory,
            disk=request.disk or self.default_disk,
            time=time or self.floor_time,
        )
