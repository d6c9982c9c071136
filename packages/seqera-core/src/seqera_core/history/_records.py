"""The rows of the task history: one finished attempt, and the summaries read from them."""

from __future__ import annotations

import math

from attrs import frozen

from ..causes import CAUSES

__all__ = ["CAUSES", "CpuUse", "ProcessStats", "TaskRecord", "cause_of"]


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
    cpus: float | None = None
    memory: int | None = None
    time: int | None = None
    peak_memory: int | None = None
    cpu_percent: float | None = None
    realtime: float | None = None
    input_bytes: int | None = None
    container: str | None = None
    finished: float | None = None
    cause: str | None = None
    cpu_time: float | None = None  # CPU seconds (user + system) the attempt used
    backend: str = ""  # the backend that ran it (``slurm``, ``local``...): what it could measure


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
    peak_memory: int | None
    cpu_percent: float | None
    realtime: float | None
    out_of_memory: int
    time_limit: int
    # The largest allocation an out-of-memory (time-limit) attempt was killed at.
    failed_memory: int | None
    failed_time: int | None


@frozen
class CpuUse:
    """Cores a process reserved and the most it kept busy (``%cpu`` / 100) over ``runs``."""

    process: str
    runs: int
    reserved: float
    busy: float

    @property
    def unused(self) -> float:
        """Cores reserved that no run ever used (whole cores; 0 when all were)."""
        return max(0.0, self.reserved - max(1.0, math.ceil(self.busy)))
