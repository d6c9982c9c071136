"""The report's figures: pure functions of history rows (and cost rates), nothing drawn.

Every quantity is an area of resource x run time over the attempts that measured it:

- memory, in GB-hours (GB = 10^9 bytes, as ``seqera-sidecar evaluate`` counts it):
  requested = memory x run time, for every attempt; used = peak resident memory x run
  time for a successful attempt; wasted = requested - used for a successful attempt, and
  everything a failed attempt requested (its work is done again, and its peak is not a
  peak);
- cpus, in core-hours: reserved = cpus x run time, for every attempt; busy = the CPU
  time the attempt used (else ``%cpu`` / 100 x run time), never more than reserved;
  wasted = reserved - busy for a successful attempt, all of it for a failed one;
- time: the run hours against the limits' hours (a limit costs nothing by itself on a
  backfilling scheduler, so its headroom is shown, never counted as waste), and per
  process the largest share of its limit a run took.

An attempt without a run time (a Slurm without accounting) counts in no area: it is
unmeasured, and its request is still shown (``declared``). A successful attempt without
its use (no peak, no CPU time) counts in ``requested`` but not in ``used`` or ``wasted``,
and is unmeasured there: :mod:`._gaps` says what would measure it. Cost comes from a platform's
rates (per core-hour and per GiB-hour) of its default queue, else of its first queue.

Outliers are the successful attempts outside Tukey's fences (1.5 x the interquartile
range beyond the quartiles), as a box plot draws them, named by their task.
"""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from attrs import field, frozen

from ..history import TaskRecord
from ..units import GIB
from ._gaps import missing
from ._records import CAUSES, cause

if TYPE_CHECKING:  # a platform file's reader (YAML, the catalogues): only with --platform
    from ..platforms import CostRates, Platform

__all__ = [
    "Costs",
    "Declared",
    "Distribution",
    "Outlier",
    "ProcessFigures",
    "Summary",
    "Usage",
    "cost_rates",
    "distribution",
    "label",
    "process_figures",
    "summary",
    "usage",
]

GB_HOUR = 1e9 * 3600
_QUANTITIES = ("memory", "peak_memory", "time", "realtime", "cpus", "busy")


@frozen
class Usage:
    """One resource over a set of attempts: requested, used and wasted resource-hours."""

    requested: float = 0.0
    used: float = 0.0
    wasted: float = 0.0
    measured: int = 0  # attempts that count here
    unmeasured: int = 0  # attempts left out for want of a number


@frozen
class Distribution:
    """Five numbers of one quantity over the successful attempts of a process."""

    count: int
    minimum: float
    q1: float
    median: float
    q3: float
    maximum: float


@frozen
class Outlier:
    """A task whose ``quantity`` lies outside the process's Tukey fences."""

    task: str
    quantity: str
    value: float
    low: float
    high: float


@frozen
class Costs:
    """Money at the platform's rates: the whole selection and its waste."""

    rates: CostRates
    total: float
    wasted: float


@frozen
class Declared:
    """The most any attempt of a process asked for: known from the requests alone."""

    cpus: float | None = None
    memory: int | None = None  # bytes
    time: int | None = None  # seconds


@frozen
class ProcessFigures:
    """One process (rule, CWL step): its attempts, usage, spread and outliers."""

    process: str
    attempts: int
    succeeded: int
    failures: dict[str, int]
    memory: Usage  # GB-hours
    cpus: Usage  # core-hours
    run_hours: float
    limit_hours: float  # over the attempts that had a limit
    distributions: dict[str, Distribution] = field(factory=dict)
    outliers: tuple[Outlier, ...] = ()
    cost_wasted: float | None = None
    declared: Declared = field(factory=Declared)
    longest: float | None = None  # seconds: the longest run of any attempt
    limit_share: float | None = None  # the largest run time / time limit of an attempt


@frozen
class Summary:
    """The selection as a whole, and each process sorted by waste (largest first)."""

    runs: tuple[str, ...]
    engines: tuple[str, ...]
    tasks: int  # distinct (run, task)
    attempts: int
    succeeded: int
    failures: dict[str, int]
    memory: Usage
    cpus: Usage
    run_hours: float
    limit_hours: float
    costs: Costs | None
    processes: tuple[ProcessFigures, ...]
    backends: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()  # what is not measured, why, and what would measure it


def label(record: TaskRecord, runs: int = 1) -> str:
    """A task's name for people: its id, its run when several, its attempt after the first."""
    text = record.task_id if runs <= 1 else f"{record.run_id}/{record.task_id}"
    return text if record.attempt == 1 else f"{text} (attempt {record.attempt})"


def busy(record: TaskRecord) -> float | None:
    """Cores the attempt kept busy on average (CPU time / run time, else ``%cpu`` / 100),
    if measured."""
    if record.cpu_time is not None and record.realtime:
        return record.cpu_time / record.realtime
    return None if record.cpu_percent is None else record.cpu_percent / 100


def usage(records: Iterable[TaskRecord], resource: str) -> Usage:
    """Requested, used and wasted ``memory`` (GB-hours) or ``cpus`` (core-hours)."""
    requested = used = wasted = 0.0
    measured = unmeasured = 0
    scale = GB_HOUR if resource == "memory" else 3600.0
    for record in records:
        amount = record.memory if resource == "memory" else record.cpus
        use = record.peak_memory if resource == "memory" else busy(record)
        seconds = record.realtime
        if amount is None or seconds is None:
            unmeasured += 1
            continue
        requested += amount * seconds  # every attempt reserved what it asked for
        if not record.succeeded:
            measured += 1
            wasted += amount * seconds
        elif use is None:
            unmeasured += 1
        else:
            measured += 1
            used += min(use, amount) * seconds if resource == "cpus" else use * seconds
            wasted += max(0.0, amount - use) * seconds
    return Usage(requested / scale, used / scale, wasted / scale, measured, unmeasured)


def _value(record: TaskRecord, quantity: str) -> float | None:
    if quantity == "busy":
        return busy(record)
    value = getattr(record, quantity)
    return None if value is None else float(value)


def distribution(values: Sequence[float]) -> Distribution | None:
    """The five numbers of ``values`` (quartiles interpolated as a box plot's), or None."""
    if not values:
        return None
    ordered = sorted(values)
    if len(ordered) == 1:
        q1 = median = q3 = ordered[0]
    else:
        q1, median, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
    return Distribution(len(ordered), ordered[0], q1, median, q3, ordered[-1])


def _outliers(records: Sequence[TaskRecord], quantity: str, runs: int) -> list[Outlier]:
    values = [(r, v) for r in records if (v := _value(r, quantity)) is not None]
    spread = distribution([v for _, v in values])
    if spread is None or spread.count < 4:
        return []
    reach = 1.5 * (spread.q3 - spread.q1)
    low, high = spread.q1 - reach, spread.q3 + reach
    return [
        Outlier(label(r, runs), quantity, v, low, high) for r, v in values if v < low or v > high
    ]


def _failures(records: Iterable[TaskRecord]) -> dict[str, int]:
    counted = Counter(c for r in records if (c := cause(r)) is not None)
    return {name: counted[name] for name in CAUSES if counted[name]}


def _hours(records: Iterable[TaskRecord], quantity: str) -> float:
    return sum(getattr(r, quantity) or 0 for r in records if r.realtime is not None) / 3600


def cost_rates(platform: Platform | None) -> CostRates | None:
    """The rates a report prices with: the default queue's, else the first queue's."""
    if platform is None or not platform.queues:
        return None
    queue = platform.queue(platform.default_queue or "") or platform.queues[0]
    rates = queue.cost
    return rates if rates.core_hour or rates.gib_hour else None


def _cost(memory: Usage, cpus: Usage, rates: CostRates, part: str) -> float:
    gib_hours = getattr(memory, part) * 1e9 / GIB
    return float(getattr(cpus, part) * rates.core_hour + gib_hours * rates.gib_hour)


def process_figures(
    process: str, records: Sequence[TaskRecord], rates: CostRates | None = None, runs: int = 1
) -> ProcessFigures:
    """The figures of one process from its attempts."""
    done = [r for r in records if r.succeeded]
    memory, cpus = usage(records, "memory"), usage(records, "cpus")
    distributions = {}
    for quantity in _QUANTITIES:
        spread = distribution([v for r in done if (v := _value(r, quantity)) is not None])
        if spread is not None:
            distributions[quantity] = spread
    outliers = [o for q in ("peak_memory", "realtime", "busy") for o in _outliers(done, q, runs)]
    timed = [r for r in records if r.realtime is not None]
    shares = [r.realtime / r.time for r in timed if r.time and r.realtime is not None]
    return ProcessFigures(
        process=process,
        attempts=len(records),
        succeeded=len(done),
        failures=_failures(records),
        memory=memory,
        cpus=cpus,
        run_hours=(sum(r.realtime or 0 for r in records)) / 3600,
        limit_hours=_hours(records, "time"),
        distributions=distributions,
        outliers=tuple(outliers),
        cost_wasted=None if rates is None else _cost(memory, cpus, rates, "wasted"),
        declared=Declared(
            cpus=max((r.cpus for r in records if r.cpus), default=None),
            memory=max((r.memory for r in records if r.memory), default=None),
            time=max((r.time for r in records if r.time), default=None),
        ),
        longest=max((r.realtime for r in timed if r.realtime is not None), default=None),
        limit_share=max(shares, default=None),
    )


def _waste_key(figures: ProcessFigures) -> tuple[float, float, str]:
    first = figures.cost_wasted if figures.cost_wasted is not None else figures.memory.wasted
    return (-first, -figures.cpus.wasted, figures.process)


def summary(records: Sequence[TaskRecord], platform: Platform | None = None) -> Summary:
    """Every figure of the report over ``records``; processes sorted by waste, largest first.

    With a platform that has rates, waste is money; without, memory GB-hours.
    """
    rates = cost_rates(platform)
    runs = tuple(dict.fromkeys(r.run_id for r in records))
    by_process: dict[str, list[TaskRecord]] = defaultdict(list)
    for record in records:
        by_process[record.process].append(record)
    processes = sorted(
        (process_figures(p, rs, rates, len(runs)) for p, rs in by_process.items()),
        key=_waste_key,
    )
    memory, cpus = usage(records, "memory"), usage(records, "cpus")
    costs = None
    if rates is not None:
        costs = Costs(rates, _cost(memory, cpus, rates, "requested"),
                      _cost(memory, cpus, rates, "wasted"))  # fmt: skip
    return Summary(
        runs=runs,
        engines=tuple(sorted({r.engine for r in records if r.engine})),
        tasks=len({(r.run_id, r.task_id) for r in records}),
        attempts=len(records),
        succeeded=sum(r.succeeded for r in records),
        failures=_failures(records),
        memory=memory,
        cpus=cpus,
        run_hours=sum(r.realtime or 0 for r in records) / 3600,
        limit_hours=_hours(records, "time"),
        costs=costs,
        processes=tuple(processes),
        backends=tuple(sorted({r.backend for r in records if r.backend})),
        missing=missing(records),
    )
