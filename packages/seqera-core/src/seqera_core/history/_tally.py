"""What a history keeps of every process for all time, so a reader never re-reads its rows.

A writer folds each new attempt into one summary row per process (and one per process,
cpus and container: the right-sizer's strata) and into the history's totals, in the same
transaction as the attempt and in the order the attempts are numbered. So a summary is
exactly what reading every row in that order would give: counts, maxima, and for peak
memory and run time the right-sizer's all-time state (how many runs used something, the
largest, and Welford's running mean and squared deviations of the log use with its two
largest, :class:`seqera_core.sizing.Moments`, the same float operations in the same order).

A replayed attempt (the same run, task and attempt written again) replaces its row but is
folded in only once, when it first came: a learner that had it already must not count it
twice. Summaries of a history written before they existed are built once when it is
opened, by the database (:mod:`._upgrade`): the same counts and maxima, the log moments
and the totals' sums the same sums in another order.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

import attrs

from ._records import TaskRecord

__all__ = ["Fed", "Summary", "Tally", "Totals", "fold", "stratum_key"]


@attrs.define
class Tally:
    """The all-time state of one quantity of one process: runs that used something, the
    largest use, and the running moments of its log (Welford; the two largest)."""

    runs: int = 0
    largest: float = 0.0
    mean: float = 0.0
    m2: float = 0.0
    top: float = -math.inf
    second: float = -math.inf

    def add(self, usage: float) -> None:
        """Count one use; the arithmetic of ``UsageModel.learn`` and ``Moments.add``."""
        if usage <= 0:
            return
        self.runs += 1
        self.largest = max(self.largest, usage)
        value = math.log(usage)
        delta = value - self.mean
        self.mean += delta / self.runs
        self.m2 += delta * (value - self.mean)
        if value > self.top:
            self.top, self.second = value, self.top
        elif value > self.second:
            self.second = value

    def values(self) -> tuple[Any, ...]:
        """The columns (an infinity stored as NULL, which every driver takes)."""
        return (self.runs, self.largest, self.mean, self.m2, _finite(self.top),
                _finite(self.second))  # fmt: skip

    @classmethod
    def of(cls, values: Sequence[Any]) -> Tally:
        """From :meth:`values`' columns."""
        runs, largest, mean, m2, top, second = values
        return cls(int(runs), float(largest), float(mean), float(m2),
                   -math.inf if top is None else float(top),
                   -math.inf if second is None else float(second))  # fmt: skip


def _finite(value: float) -> float | None:
    return None if math.isinf(value) else value


def stratum_key(cpus: float | None, container: str | None) -> str:
    """The text key of a (cpus, container) stratum; ``""`` is the whole process."""
    return json.dumps([None if cpus is None else float(cpus), container])


def _most(old: Any, new: Any) -> Any:
    return new if old is None else (old if new is None else max(old, new))


@attrs.define
class Summary:
    """One process (``stratum == ""``) or one (process, cpus, container) stratum."""

    process: str
    stratum: str
    cpus: float | None
    container: str | None
    first_seq: int
    last_seq: int = 0
    # ProcessStats: over successful attempts, and the failures
    attempts: int = 0
    succeeded: int = 0
    peak_memory: int | None = None
    cpu_percent: float | None = None
    realtime: float | None = None
    out_of_memory: int = 0
    time_limit: int = 0
    failed_memory: int | None = None
    failed_time: int | None = None
    # CpuUse: successful attempts that report both cpus and %cpu
    cpu_runs: int = 0
    cpus_reserved: float | None = None
    cpus_busy: float | None = None
    memory: Tally = attrs.field(factory=Tally)
    time: Tally = attrs.field(factory=Tally)

    @property
    def whole(self) -> bool:
        """The whole process, not one of its strata."""
        return self.stratum == ""

    def add(self, seq: int, record: TaskRecord) -> None:
        """Fold one attempt in (the rules of ``PredictiveResolver._learn`` and of STATS)."""
        self.last_seq = seq
        self.attempts += 1
        if record.succeeded:
            self.succeeded += 1
            self.peak_memory = _most(self.peak_memory, record.peak_memory)
            self.cpu_percent = _most(self.cpu_percent, record.cpu_percent)
            self.realtime = _most(self.realtime, record.realtime)
            if record.cpus is not None and record.cpu_percent is not None:
                self.cpu_runs += 1
                self.cpus_reserved = _most(self.cpus_reserved, record.cpus)
                self.cpus_busy = _most(self.cpus_busy, record.cpu_percent)
            if record.peak_memory:
                self.memory.add(record.peak_memory)
            if record.realtime:
                self.time.add(record.realtime)
            return
        if record.out_of_memory:
            self.out_of_memory += 1
            self.failed_memory = _most(self.failed_memory, record.memory)
        if record.time_limit:
            self.time_limit += 1
            self.failed_time = _most(self.failed_time, record.time)

    def values(self) -> tuple[Any, ...]:
        """The row, in :data:`SUMMARY_COLUMNS` order."""
        return (self.process, self.stratum, self.cpus, self.container, self.first_seq,
                self.last_seq, self.attempts, self.succeeded, self.peak_memory,
                self.cpu_percent, self.realtime, self.out_of_memory, self.time_limit,
                self.failed_memory, self.failed_time, self.cpu_runs, self.cpus_reserved,
                self.cpus_busy, *self.memory.values(), *self.time.values())  # fmt: skip

    @classmethod
    def of(cls, row: Sequence[Any]) -> Summary:
        """From a stored row."""
        head, memory, time = row[:18], row[18:24], row[24:30]
        return cls(*head, memory=Tally.of(memory), time=Tally.of(time))  # type: ignore[misc]


_TALLY = ("runs", "largest", "mean", "m2", "top", "second")
SUMMARY_COLUMNS = tuple(
    [a.name for a in attrs.fields(Summary) if a.name not in ("memory", "time")]
    + [f"{quantity}_{name}" for quantity in ("memory", "time") for name in _TALLY]
)


@attrs.define
class Totals:
    """Over every process: attempts stored, the last folded in, and what a typical task
    uses (the right-sizer's ``Budget``: peak x run time, and run time)."""

    last_seq: int = 0
    attempts: int = 0
    memory_runs: int = 0
    memory_total: float = 0.0
    time_runs: int = 0
    time_total: float = 0.0

    def add(self, seq: int, record: TaskRecord) -> None:
        """Fold one attempt in (``Budget.add`` of ``PredictiveResolver._learn``)."""
        self.last_seq = seq
        self.attempts += 1
        if record.succeeded and record.peak_memory:
            self.memory_runs += 1
            self.memory_total += record.peak_memory * (record.realtime or 1.0)
        if record.succeeded and record.realtime:
            self.time_runs += 1
            self.time_total += record.realtime * 1.0

    def swap(self, seq: int, before: TaskRecord, after: TaskRecord) -> None:
        """A rewritten attempt: ``before``'s share out, ``after``'s in (the attempt count
        stays: it replaced itself)."""
        self.add(seq, after)
        self.attempts -= 1
        if before.succeeded and before.peak_memory:
            self.memory_runs -= 1
            self.memory_total -= before.peak_memory * (before.realtime or 1.0)
        if before.succeeded and before.realtime:
            self.time_runs -= 1
            self.time_total -= before.realtime * 1.0


@attrs.frozen
class Fed:
    """One stored attempt as a learner reads it: its number, and whether it replayed an
    attempt stored before (then it is in every summary already)."""

    seq: int
    replay: bool
    record: TaskRecord


def fold(
    totals: Totals,
    summaries: dict[tuple[str, str], Summary],
    attempts: Iterable[tuple[int, TaskRecord]],
) -> set[tuple[str, str]]:
    """Fold numbered first-time attempts (oldest first) into ``totals`` and ``summaries``
    (created as needed); returns the keys of the summaries it changed."""
    changed: set[tuple[str, str]] = set()
    for seq, record in attempts:
        totals.add(seq, record)
        for stratum in ("", stratum_key(record.cpus, record.container)):
            key = (record.process, stratum)
            summary = summaries.get(key)
            if summary is None:
                cpus = None if not stratum or record.cpus is None else float(record.cpus)
                container = record.container if stratum else None
                summary = summaries[key] = Summary(record.process, stratum, cpus, container, seq)
            summary.add(seq, record)
            changed.add(key)
    return changed
