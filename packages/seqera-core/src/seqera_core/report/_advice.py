"""What the right-sizer would ask for next time, per process, and what it would have saved.

The right-sizer is :class:`~seqera_core.resolvers.PredictiveResolver` over the same
history the report reads, with ``apply_cpus`` (cpus cut to the most cores a process ever
kept busy, never above what it declared). It learns every run in that history, this one
included: the advice is what the next run would get.

*Next time* is its answer for a task of the process that declares the most the run's
tasks declared and gives no input size: what a static config (Nextflow ``withName``, a
Snakemake profile) can carry. *The saving on this run* sizes each successful task of the
run as the right-sizer would have sized it, from its input size: memory saves
(requested - advised) x run time; an advice below the task's peak would have had it
killed, so the run time at the advice is charged instead (and the task counted as one
the advice is too small for); cpus save (declared - advised) x run time; a time limit
below the run time also counts the task as too small. Memory is left out for a process
whose peaks were never measured: a floor would not be advice. Advice never goes below
what the engine's executor would submit anyway (Snakemake's jobs run in at least
:data:`~seqera_core.dialects.snakemake.RUNNER_MEMORY`): a config asking for less would
be raised again at submission, and the saving is counted at what would really run.

Advice never asks for more than was declared without a failure to justify it: memory
above the largest declared only after an out-of-memory failure of the process (in this
history), a time limit above the declared one only after a time-limit failure, and
never more cpus than declared. A rule that declares ``runtime=5`` and ran 0.1 s is told
5 minutes at most, not the resolver's 10-minute floor.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import attrs
from attrs import frozen

from ..dialects.engines import memory_floor
from ..history import History, TaskRecord, cause_of
from ..models import ResourceRequest, ResourceResponse
from ..resolvers import PredictiveResolver
from ._figures import GB_HOUR

__all__ = ["Advice", "advise"]


@frozen
class Advice:
    """The right-sizer's next ask for one process and its saving on this run."""

    process: str
    cpus: float
    memory: int | None  # bytes; None when no peak was measured
    time: int | None  # seconds; None when no run time was measured
    sized: int  # successful tasks of the run it sized
    saved_memory: float  # GB-hours (negative when it would have cost more)
    saved_cpus: float  # core-hours
    too_small: int  # of those tasks, how many the advice would not have fitted


def _request(record: TaskRecord, input_bytes: int | None) -> ResourceRequest:
    return ResourceRequest(
        cpus=record.cpus or None,
        memory=record.memory or None,
        time=record.time or None,
        process=record.process,
        input_bytes=input_bytes,
    )


def _largest(records: Sequence[TaskRecord]) -> TaskRecord:
    """A task declaring the most any of ``records`` declared (each quantity on its own)."""
    first = records[0]
    return TaskRecord(
        run_id=first.run_id,
        task_id=first.task_id,
        process=first.process,
        succeeded=True,
        cpus=max((r.cpus for r in records if r.cpus), default=None),
        memory=max((r.memory for r in records if r.memory), default=None),
        time=max((r.time for r in records if r.time), default=None),
    )


@frozen
class _Failed:
    """Whether a process ever ran out of memory or time: what justifies asking for more."""

    memory: bool
    time: bool


def _within(
    answer: ResourceResponse, declared: TaskRecord, floor: int, failed: _Failed
) -> ResourceResponse:
    """``answer`` no larger than ``declared`` where no failure says it must be."""
    memory_cap = max(declared.memory or 0, floor)
    if declared.memory and not failed.memory and answer.memory > memory_cap:
        answer = attrs.evolve(answer, memory=memory_cap)
    if declared.time and not failed.time and answer.time > declared.time:
        answer = attrs.evolve(answer, time=declared.time)
    if declared.cpus and answer.cpus > declared.cpus:
        answer = attrs.evolve(answer, cpus=declared.cpus)
    return answer


def _failed(history: History, process: str, records: Sequence[TaskRecord]) -> _Failed:
    stats = history.stats(process)
    memory = any(cause_of(r) == "out_of_memory" for r in records)
    time = any(cause_of(r) == "time_limit" for r in records)
    if stats is not None:
        memory, time = memory or stats.out_of_memory > 0, time or stats.time_limit > 0
    return _Failed(memory, time)


def _one(
    resolver: PredictiveResolver, process: str, records: Sequence[TaskRecord], failed: _Failed
) -> Advice | None:
    done = [r for r in records if r.succeeded]
    if not done:
        return None
    largest = _largest(records)
    answer = resolver.resolve(_request(largest, None))
    if answer is None:
        return None
    floor = max(memory_floor(r.engine) for r in records)
    answer = _within(_at_least(answer, floor), largest, floor, failed)
    measured = any(r.peak_memory for r in done)
    timed = any(r.realtime for r in done)
    saved_memory = saved_cpus = 0.0
    sized = too_small = 0
    for record in done:
        each = resolver.resolve(_request(record, record.input_bytes))
        if each is None or record.realtime is None:
            continue
        each = _within(_at_least(each, floor), record, floor, failed)
        sized += 1
        saving = _memory_saving(record, each, measured)
        killed = saving is None
        if saving is None:  # killed at the advice: its run time there is lost
            saved_memory -= each.memory * record.realtime / GB_HOUR
        else:
            saved_memory += saving
        if record.cpus:
            saved_cpus += (record.cpus - each.cpus) * record.realtime / 3600
        killed |= timed and each.time < record.realtime
        too_small += killed
    return Advice(
        process=process,
        cpus=answer.cpus,
        memory=answer.memory if measured else None,
        time=answer.time if timed else None,
        sized=sized,
        saved_memory=saved_memory,
        saved_cpus=saved_cpus,
        too_small=too_small,
    )


def _at_least(answer: ResourceResponse, memory: int) -> ResourceResponse:
    return answer if answer.memory >= memory else attrs.evolve(answer, memory=memory)


def _memory_saving(record: TaskRecord, answer: ResourceResponse, measured: bool) -> float | None:
    """GB-hours saved on ``record``'s memory, or ``None`` when the answer is below its peak."""
    if not measured or not record.memory or record.peak_memory is None:
        return 0.0
    if answer.memory < record.peak_memory:
        return None
    assert record.realtime is not None
    return (record.memory - answer.memory) * record.realtime / GB_HOUR


def advise(history: History, records: Sequence[TaskRecord]) -> dict[str, Advice]:
    """Per process of ``records``, the right-sizer's advice (processes it cannot size: none)."""
    # the history as it is now: one read of its summaries, then only the run's processes
    resolver = PredictiveResolver(history, apply_cpus=True, follow=False)
    by_process: dict[str, list[TaskRecord]] = defaultdict(list)
    for record in records:
        by_process[record.process].append(record)
    found = {
        p: _one(resolver, p, rs, _failed(history, p, rs)) for p, rs in sorted(by_process.items())
    }
    return {p: advice for p, advice in found.items() if advice is not None}
