"""The planner's values: a job to place, a planned instance, the lower bound; and the
integer units (thousandths of a vCPU, bytes, GPUs) the planner compares them in.

See :mod:`seqera_core.planning._planner` for the algorithm; this module holds only data and the
exact conversions every step shares.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from attrs import field, frozen

from ..errors import ResourceError
from ..units import format_bytes
from .catalogue import InstanceType

__all__ = [
    "LARGEST",
    "Instance",
    "Job",
    "LowerBound",
    "capacity",
    "check_cpus",
    "checked_job",
    "covers",
    "demand",
    "millicores",
    "missing",
    "used",
]

Room = tuple[int, int, int]

# Larger counts are no machine's (int64, what schedulers store), and past 2**1023 a count
# no longer converts to the floats that utilisation and prices are computed in.
LARGEST = 2**63 - 1


def check_cpus(value: Any) -> None:
    """Raise ResourceError unless ``value`` is a number of cores > 0 that floats can hold."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 < value <= LARGEST
        or not math.isfinite(value)
    ):
        raise ResourceError("cpus", value, f"a number of cores greater than 0, at most {LARGEST}")


def _cpus(_: Any, attribute: Any, value: Any) -> None:
    check_cpus(value)


def _whole(name: str, minimum: int) -> Any:
    def check(_: Any, attribute: Any, value: Any) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= LARGEST:
            raise ResourceError(name, value, f"a whole number from {minimum} to {LARGEST}")

    return check


@frozen
class Job:
    """A job to place: vCPUs, memory in bytes, GPUs and an optional instance-type hint."""

    name: str
    cpus: float = field(validator=_cpus)
    memory: int = field(validator=_whole("memory", 1))
    gpus: int = field(default=0, validator=_whole("gpus", 0))
    instance_type: str | None = None


_new = object.__new__
_set = object.__setattr__


def checked_job(name: str, cpus: float, memory: int, gpus: int, hint: str | None) -> Job:
    """A :class:`Job` of values its caller has checked as the validators do (``cpus``
    in (0, LARGEST], ``memory`` in [1, LARGEST], ``gpus`` in [0, LARGEST], all of exact
    types ``int``/``float``): the jobs file's 100,000 entries without running them again
    (the validators are half the cost of reading a job)."""
    job: Job = _new(Job)
    _set(job, "name", name)
    _set(job, "cpus", cpus)
    _set(job, "memory", memory)
    _set(job, "gpus", gpus)
    _set(job, "instance_type", hint)
    return job


@frozen
class Instance:
    """One planned instance: its number in the plan, its type and the jobs placed on it."""

    id: int
    type: InstanceType
    jobs: tuple[Job, ...] = ()

    @property
    def used_cpus(self) -> float:
        """vCPUs the jobs take (each rounded up to a thousandth of a core)."""
        return sum(millicores(j.cpus) for j in self.jobs) / 1000

    @property
    def used_memory(self) -> int:
        """Bytes of memory the jobs take."""
        return sum(j.memory for j in self.jobs)

    @property
    def used_gpus(self) -> int:
        """GPUs the jobs take."""
        return sum(j.gpus for j in self.jobs)


@frozen
class LowerBound:
    """No plan costs less per hour: per dimension, demand times the cheapest unit price."""

    hourly: float
    dimension: str | None
    per_dimension: Mapping[str, float] = field(factory=dict)


def millicores(cpus: float) -> int:
    """vCPUs in thousandths of a core, rounded up (``0.1`` is 100, not 101)."""
    if isinstance(cpus, int):
        return cpus * 1000
    scaled = cpus * 1000
    if scaled.is_integer() and scaled >= 1:
        return int(scaled)  # 0.5, 0.25, 1.0: exact, no rounding to decide
    nearest = round(scaled)
    # 0.1 * 1000 is 100.00000000000001 in binary floating point: that is 100, not 101
    whole = int(nearest) if abs(scaled - nearest) < 1e-6 else math.ceil(scaled)
    return max(whole, 1)  # a job with cpus > 0 takes room, however little


def capacity(t: InstanceType) -> Room:
    """A type's room: its vCPUs in thousandths (rounded down), memory and GPUs."""
    cores = t.vcpus * 1000
    nearest = round(cores)
    whole = int(nearest) if abs(cores - nearest) < 1e-6 else math.floor(cores)
    return whole, t.memory, t.gpus


def demand(job: Job) -> Room:
    """What a job takes: its vCPUs in thousandths (rounded up), memory and GPUs."""
    return millicores(job.cpus), job.memory, job.gpus


def covers(room: Room, need: Room) -> bool:
    """Whether ``room`` holds ``need`` in every dimension."""
    return room[0] >= need[0] and room[1] >= need[1] and room[2] >= need[2]


def used(jobs: Iterable[Job]) -> Room:
    """What the jobs take together."""
    cpus = memory = gpus = 0
    for job in jobs:
        cpus += millicores(job.cpus)
        memory += job.memory
        gpus += job.gpus
    return cpus, memory, gpus


def missing(t: InstanceType, job: Job) -> str:
    """What an empty instance of ``t`` lacks to hold ``job``, for an error message."""
    have, need = capacity(t), demand(job)
    parts = []
    if have[0] < need[0]:
        parts.append(f"{job.cpus} vCPUs (it has {t.vcpus})")
    if have[1] < need[1]:
        parts.append(f"{format_bytes(job.memory)} memory (it has {format_bytes(t.memory)})")
    if have[2] < need[2]:
        parts.append(f"{job.gpus} GPUs (it has {t.gpus})")
    return ", ".join(parts)
