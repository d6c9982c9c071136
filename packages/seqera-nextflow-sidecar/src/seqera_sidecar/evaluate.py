"""Replaying a Nextflow trace against a memory predictor: waste, MAQ and retries.

The protocol (issue 11): per process with at least 34 runs, a seeded random 30 % of its
tasks is history and the other 70 % arrive online, all processes interleaved in one
random order. A task given less than its peak (``rss``) fails, is charged its whole
allocation x run time, is recorded as an out-of-memory attempt and is retried with what
the predictor then answers; a task given enough is charged (allocation - peak) x run time
and is learned. Every online attempt is recorded with the predictor's own allocation as
its memory, as a real run records what it was given, so the self-sizing guard reads the
allocations it chose against peaks that cannot follow them: each process it flags
(:attr:`Score.flagged`) is a false alarm. GB = 10^9 bytes, hours from ``realtime``;
MAQ = used / (used + wasted).

Time limits are replayed the same way, apart (`evaluate_time`): a task whose limit is
below its ``realtime`` is killed, loses the limit's hours, is recorded as a time-limit
attempt and is retried; memory plays no part there.

A :class:`Sample` replays a pipeline with little history instead: per process, a seeded
``history`` tasks are history and the next ``online`` arrive online (12 and 28 is the
issue's pipeline B, where most processes have about that many), so how a predictor does
on its first tasks of a process with a dozen runs is measured on the traces there are.

A trace records no input sizes: ``rchar`` (bytes the task read, inputs and index alike)
stands in for them (:mod:`.trace`). Several traces are compared with each trace left
out in turn by :mod:`.lopo`; the command line is :mod:`.evaluate_cli`.
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from collections.abc import Callable, Sequence

import attrs
from attrs import frozen

from seqera_core.history import History, TaskRecord, open_history
from seqera_core.models import ResourceRequest
from seqera_core.resolvers import MaximumResolver, PredictiveResolver, Resolver

__all__ = ["PREDICTORS", "Sample", "Score", "TimeScore", "evaluate", "evaluate_time", "split"]

MIN_RUNS = 34
HISTORY_SHARE = 0.3
MAX_ATTEMPTS = 20
_GBH = 1e9 * 3600

Build = Callable[[History], Resolver]

# A predictor is built over the history it may read; ``None`` means the trace's presets.
PREDICTORS: dict[str, Build | None] = {
    "preset": None,
    "max": lambda h: MaximumResolver(h, margin=1.0, escalation=2.0),
    "max-1.2": lambda h: MaximumResolver(h, margin=1.2, escalation=2.0),
    "predictive": lambda h: PredictiveResolver(h),
}


@frozen
class Sample:
    """Per process, ``history`` tasks of history and the next ``online`` online (a process
    with fewer than both together keeps what it has, history first)."""

    history: int = attrs.field(validator=attrs.validators.ge(1))
    online: int = attrs.field(validator=attrs.validators.ge(1))


@frozen
class Score:
    """One predictor on one trace: waste in GB-h, MAQ, and retries among online tasks."""

    predictor: str
    tasks: int
    used_gbh: float
    wasted_gbh: float
    retries: int
    by_process: dict[str, float] = attrs.field(factory=dict, eq=False)
    # processes the right-sizer's guard took, from their history, for tools that size
    # themselves from their allocation (at any point of the replay)
    flagged: tuple[str, ...] = ()

    @property
    def maq(self) -> float:
        """Memory allocation quality: used / (used + wasted)."""
        total = self.used_gbh + self.wasted_gbh
        return self.used_gbh / total if total else 1.0

    @property
    def retry_share(self) -> float:
        """Retried attempts as a share of online tasks."""
        return self.retries / self.tasks if self.tasks else 0.0


@frozen
class TimeScore:
    """One predictor's time limits on one trace: how much shorter, and what kills cost."""

    predictor: str
    tasks: int
    undeclared: int  # online tasks the trace gives no limit (never at risk of one)
    declared_hours: float  # the trace's own limits of the others, first attempts
    limit_hours: float  # the limits the tasks finished under (those with one)
    run_hours: float
    kills: int  # attempts killed at their time limit
    killed_twice: int  # tasks killed more than once
    lost_hours: float  # run time thrown away by kills

    @property
    def kill_share(self) -> float:
        """Killed attempts as a share of online tasks."""
        return self.kills / self.tasks if self.tasks else 0.0


def split(
    records: Sequence[TaskRecord], seed: int, sample: Sample | None = None
) -> tuple[list[TaskRecord], list[TaskRecord]]:
    """The protocol's (history, online) split, or ``sample``'s: online tasks in one seeded
    random order."""
    rng = random.Random(seed)
    groups: dict[str, list[TaskRecord]] = defaultdict(list)
    for record in records:
        if record.peak_memory and record.realtime:
            groups[record.process].append(record)
    past: list[TaskRecord] = []
    online: list[TaskRecord] = []
    for process in sorted(groups):
        tasks = groups[process]
        if len(tasks) < MIN_RUNS:
            continue
        rng.shuffle(tasks)
        cut = round(len(tasks) * HISTORY_SHARE) if sample is None else sample.history
        past += tasks[:cut]
        online += tasks[cut:] if sample is None else tasks[cut : cut + sample.online]
    rng.shuffle(online)
    return past, online


def _name(predictor: str | Build) -> str:
    return predictor if isinstance(predictor, str) else getattr(predictor, "name", "custom")


def _request(task: TaskRecord, attempt: int) -> ResourceRequest:
    return ResourceRequest(
        cpus=task.cpus,
        memory=task.memory,
        time=task.time or None,
        process=task.process,
        attempt=attempt,
        input_bytes=task.input_bytes,
        container=task.container,
    )


def _replay(
    records: Sequence[TaskRecord], seed: int, predictor: str | Build, sample: Sample | None
) -> tuple[list[TaskRecord], History, Resolver | None]:
    """The online tasks, and a history of the others with ``predictor`` over it."""
    build = PREDICTORS[predictor] if isinstance(predictor, str) else predictor
    past, online = split(records, seed, sample)
    history = open_history(":memory:")
    history.record(past)
    return online, history, build(history) if build is not None else None


def evaluate(
    records: Sequence[TaskRecord], seed: int, predictor: str | Build, sample: Sample | None = None
) -> Score:
    """Replay ``records`` (one trace) with ``predictor`` (a name, or how to build one)."""
    online, history, resolver = _replay(records, seed, predictor, sample)
    used = wasted = 0.0
    retries = 0
    by_process: dict[str, float] = defaultdict(float)
    for task in online:
        peak, seconds = task.peak_memory or 0, task.realtime or 0.0
        used += peak * seconds
        for attempt in range(1, MAX_ATTEMPTS + 1):
            declared = task.memory or peak
            if resolver is None:
                # nf-core's presets: memory * task.attempt
                allocation = declared * attempt
            else:
                answer = resolver.resolve(_request(task, attempt))
                allocation = declared if answer is None else answer.memory
            ok = allocation >= peak
            cost = (allocation - peak if ok else allocation) * seconds
            wasted += cost
            by_process[task.process] += cost / _GBH
            outcome = attrs.evolve(task, attempt=attempt, memory=allocation, succeeded=ok,
                                   out_of_memory=not ok)  # fmt: skip
            if not ok:
                outcome = attrs.evolve(outcome, peak_memory=None, realtime=None)
            history.record([outcome])
            if ok:
                break
            retries += 1
    history.close()
    name = _name(predictor)
    flagged = tuple(sorted(getattr(resolver, "flagged", ())))
    return Score(name, len(online), used / _GBH, wasted / _GBH, retries, dict(by_process),
                 flagged)  # fmt: skip


def evaluate_time(
    records: Sequence[TaskRecord], seed: int, predictor: str | Build, sample: Sample | None = None
) -> TimeScore:
    """Replay the time limits of ``records`` (one trace) with ``predictor``, as for memory."""
    online, history, resolver = _replay(records, seed, predictor, sample)
    declared_total = limits = runs = lost = 0.0
    kills = killed_twice = undeclared = 0
    for task in online:
        seconds = task.realtime or 0.0
        runs += seconds
        declared = task.time or math.inf
        declared_total += task.time or 0
        undeclared += not task.time
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if resolver is None:
                limit = declared * attempt  # nf-core's presets: time * task.attempt
            else:
                answer = resolver.resolve(_request(task, attempt))
                limit = declared if answer is None or answer.time is None else answer.time
            ok = limit >= seconds
            outcome = attrs.evolve(task, attempt=attempt, succeeded=ok, time_limit=not ok,
                                   time=None if math.isinf(limit) else int(limit))  # fmt: skip
            if not ok:
                outcome = attrs.evolve(outcome, peak_memory=None, realtime=None)
                lost += limit
                kills += 1
                killed_twice += attempt == 2
            history.record([outcome])
            if ok:
                limits += 0 if math.isinf(limit) else limit
                break
    history.close()
    return TimeScore(_name(predictor), len(online), undeclared, declared_total / 3600,
                     limits / 3600, runs / 3600, kills, killed_twice, lost / 3600)  # fmt: skip
