"""Which queued jobs of the local backend start now: EASY backfilling, as pure functions.

Jobs start in submission order while they fit the free cores and memory; a job that does
not fit waits at the head of the queue with a reservation (when it can start at the
latest, from the running jobs' time limits), and later jobs may start before it only if
they cannot delay it: they end, by their time limit, before the head could start anyway,
or they only use what the head leaves spare. Like Slurm's ``bf_max_job_test``, at most
``depth`` queued jobs are looked at per decision.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from ...errors import ResourceError
from ..base import JobSpec
from ._job import LocalJob

__all__ = ["DEPTH", "backfill", "check", "fits", "reservation"]

_INF = math.inf
DEPTH = 256


def check(spec: JobSpec, cpus: float, memory: int) -> None:
    """Raise ResourceError if ``spec`` could never start with ``cpus`` and ``memory`` in all."""
    if not spec.command:
        raise ResourceError("command", list(spec.command), "a non-empty argv")
    request = spec.request
    if math.ceil(request.cpus or 1) > cpus:
        raise ResourceError(
            "cpus", request.cpus, f"at most {cpus:g} cores, the capacity of the local backend"
        )
    if request.memory is not None and request.memory > memory:
        raise ResourceError(
            "memory", request.memory, f"at most {memory} bytes, the capacity of the local backend"
        )


def fits(job: LocalJob, cpus: float, memory: int) -> bool:
    """Whether the job's cores and memory fit in what is free."""
    return job.cpus <= cpus and job.memory <= memory


def _latest_end(job: LocalJob, now: float, kill_grace: float) -> float:
    if job.killed:
        return 0.0  # SIGKILLed: gone as soon as the kernel reaps it
    if job.kill_at is not None:
        return job.kill_at
    limit = job.spec.request.time
    # A job chosen to start now but not started yet ends by now + its limit at the latest.
    deadline = job.deadline if job.started is not None else (None if limit is None else now + limit)
    return _INF if deadline is None else deadline + kill_grace


def reservation(
    head: LocalJob,
    running: Sequence[LocalJob],
    cpus: float,
    memory: int,
    now: float,
    kill_grace: float,
) -> tuple[float, float, int]:
    """When ``head`` can start at the latest, and what it leaves spare then."""
    for job in sorted(running, key=lambda j: _latest_end(j, now, kill_grace)):
        cpus += job.cpus
        memory += job.memory
        if fits(head, cpus, memory):
            end = _latest_end(job, now, kill_grace)
            return end, cpus - head.cpus, memory - head.memory
    return _INF, 0.0, 0  # unreachable: submit() refuses jobs larger than the machine


def backfill(
    queue: Sequence[LocalJob],
    running: Sequence[LocalJob],
    capacity_cpus: float,
    capacity_memory: int,
    now: float,
    kill_grace: float,
    depth: int = DEPTH,
) -> list[LocalJob]:
    """The queued jobs to start now, in the order to start them."""
    free_cpus = capacity_cpus - sum(job.cpus for job in running)
    free_memory = capacity_memory - sum(job.memory for job in running)
    chosen: list[LocalJob] = []
    position = 0
    while position < len(queue) and fits(queue[position], free_cpus, free_memory):
        job = queue[position]
        chosen.append(job)
        free_cpus -= job.cpus
        free_memory -= job.memory
        position += 1
    waiting = list(itertools.islice(queue, position, None))
    if len(waiting) < 2 or free_cpus < 1:  # every job holds at least one core
        return chosen
    shadow, spare_cpus, spare_memory = reservation(
        waiting[0], [*running, *chosen], free_cpus, free_memory, now, kill_grace
    )
    for job in waiting[1 : 1 + depth]:
        if not fits(job, free_cpus, free_memory):
            continue
        limit = job.spec.request.time
        ends_in_time = limit is not None and now + limit + kill_grace <= shadow
        if not ends_in_time:
            if not fits(job, spare_cpus, spare_memory):
                continue
            spare_cpus -= job.cpus
            spare_memory -= job.memory
        chosen.append(job)
        free_cpus -= job.cpus
        free_memory -= job.memory
    return chosen
