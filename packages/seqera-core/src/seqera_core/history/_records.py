"""The rows of the task history: one finished attempt, and the summaries read from them."""

from __future__ import annotations

import math
from typing import Any

from attrs import field, frozen

from ..bounds import (
    LARGEST,
    MAX_BYTES,
    MAX_CPU_PERCENT,
    MAX_CPUS,
    MAX_EPOCH_SECONDS,
    MAX_SECONDS,
    within,
)
from ..causes import CAUSES

__all__ = ["CAUSES", "CpuUse", "ProcessStats", "TaskRecord", "cause_of"]


# A measure outside the contract (an infinity, a 1e308 a hostile weblog event left in an
# older history) reads as not measured: nothing stored can overflow a report. Named
# functions, one per bound, as attrs converters (mypy's attrs plugin reads no closures).
def _cpus(value: Any) -> Any:
    return within(value, MAX_CPUS)


def _bytes(value: Any) -> Any:
    return within(value, MAX_BYTES)


def _seconds(value: Any) -> Any:
    return within(value, MAX_SECONDS)


def _percent(value: Any) -> Any:
    return within(value, MAX_CPU_PERCENT)


def _count(value: Any) -> Any:
    return within(value, LARGEST)


def _epoch(value: Any) -> Any:
    return within(value, MAX_EPOCH_SECONDS)


def _cpu_seconds(value: Any) -> Any:
    return within(value, MAX_SECONDS * MAX_CPUS)


def _cores(value: Any) -> float:
    return within(value, MAX_CPUS) or 0.0


@frozen
class TaskRecord:
    """One finished attempt: requested ``cpus``/``memory`` (bytes)/``time`` (s), and usage.

    ``cause`` is one of :data:`CAUSES` for an attempt that did not succeed (``None`` when it
    did); rows written before the column existed get it from the flags (:func:`cause_of`).
    ``cpu_time`` is the CPU seconds its processes used (busy cores = ``cpu_time`` /
    ``realtime``); ``cpu_percent`` is the same as Nextflow's ``%cpu`` where only that is known.
    ``finished`` is when the attempt ended (its start plus its run time where the backend
    knows its start, else when the engine saw it end), so it ran from ``finished -
    realtime`` to ``finished``.
    A number outside the contract's bounds (:mod:`seqera_core.bounds`) is ``None``.
    """

    run_id: str
    task_id: str
    process: str
    succeeded: bool
    attempt: int = 1
    engine: str = ""
    exit_code: int | None = None
    out_of_memory: bool = False
    time_limit: bool = False
    cpus: float | None = field(default=None, converter=_cpus)
    memory: int | None = field(default=None, converter=_bytes)
    time: int | None = field(default=None, converter=_seconds)
    peak_memory: int | None = field(default=None, converter=_bytes)
    cpu_percent: float | None = field(default=None, converter=_percent)
    realtime: float | None = field(default=None, converter=_seconds)
    input_bytes: int | None = field(default=None, converter=_count)
    container: str | None = None
    finished: float | None = field(default=None, converter=_epoch)
    cause: str | None = None
    # CPU seconds (user + system) the attempt used
    cpu_time: float | None = field(default=None, converter=_cpu_seconds)
    backend: str = ""  # the backend that ran it (``slurm``, ``local``...): what it could measure
    route: str = ""  # why the routing backend chose that backend (empty: no routing)


def cause_of(record: TaskRecord) -> str | None:
    """The record's failure cause, derived from its flags when it was stored without one."""
    if record.succeeded:
        return None
    if record.cause in CAUSES:
        return record.cause
    if record.out_of_memory:
        return "out_of_memory"
    if record.time_limit:
        return "time_limit"
    return "other"


@frozen
class ProcessStats:
    """A process's history: the largest usage over successful attempts, and its failures."""

    process: str
    runs: int
    peak_memory: int | None = field(converter=_bytes)
    cpu_percent: float | None = field(converter=_percent)
    realtime: float | None = field(converter=_seconds)
    out_of_memory: int
    time_limit: int
    # The largest allocation an out-of-memory (time-limit) attempt was killed at.
    failed_memory: int | None = field(converter=_bytes)
    failed_time: int | None = field(converter=_seconds)


@frozen
class CpuUse:
    """Cores a process reserved and the most it kept busy (``%cpu`` / 100) over ``runs``."""

    process: str
    runs: int
    reserved: float = field(converter=_cores)
    busy: float = field(converter=_cores)

    @property
    def unused(self) -> float:
        """Cores reserved that no run ever used (whole cores; 0 when all were)."""
        return max(0.0, self.reserved - max(1.0, math.ceil(self.busy)))
