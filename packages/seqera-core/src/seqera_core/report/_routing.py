"""What routing saved: the same tasks, had every one gone to a single backend.

An estimate, not a measurement, and built from what the history holds for each attempt:
where it ran, its measured run time, when it ended (so when it started), what it asked
for, and the routing backend's decision (:mod:`._reasons`), which gives, for every
candidate, the router's estimate at the time of how long the job would wait there
before it started, or why it could not run there. The rules:

- **Run time**: an attempt runs as long on any backend as it ran on its own (the history
  measured it once; the backends' machines are taken as alike).
- **Wait** (submission to start, plus the status poll): per backend, the least start the
  router ever expected there, over the tasks, never below 0. The least, because an
  estimate made while the backend was busy also holds a queue that the simulation below
  counts itself. A backend the router gave no estimate for waits 0, and the page says so.
- **Submission**: an attempt was submitted at its start less its own backend's wait.
- **Cores**: a backend runs at once at most the cores it was seen to run at once in the
  selection (and at least the widest task it could run); a backend that ran nothing here
  is taken as never full. Tasks start first come, first served, as soon as the cores are
  free (no backfill, as the router's own ``start_after``), so a machine of 2 cores given
  every task queues them.
- **Finish**: from the first submission to the last end, summed over the runs.
- **Cost**: each attempt's hourly price at the backend's rates (cores, memory; GPUs are
  not in the history) times its run time; a backend without rates costs nothing, as the
  router counts it. No rates at all: no cost.
- A backend that could not run some task (the reason says so) is no alternative: it is
  shown with how many it could not run, and never chosen as the best.

Dependencies between tasks are not known here: a task keeps its submission time whatever
backend its inputs came from. The router chose each task by the same estimates, so the
saving is the router's own view, checked against the run times measured.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from attrs import field, frozen

if TYPE_CHECKING:  # a platform file's reader (YAML, the catalogues): only with --platform
    from ..platforms import CostRates

__all__ = [
    "Alternative",
    "Saving",
    "Task",
    "capacity",
    "estimate",
    "schedule",
    "waits",
]


def _floats(values: Mapping[str, float] | Iterable[tuple[str, float]]) -> dict[str, float]:
    return dict(values)


def _texts(values: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, str]:
    return dict(values)


@frozen
class Task:
    """One attempt as the estimate sees it (epoch ``start``, seconds ``runtime``), with the
    router's estimate per candidate of how long it would ``wait`` there before it started,
    and why the others could not run it."""

    run_id: str
    backend: str
    start: float
    runtime: float
    cpus: float = 1.0
    memory: int = 0
    wait: dict[str, float] = field(factory=dict, converter=_floats)
    refused: dict[str, str] = field(factory=dict, converter=_texts)


@frozen
class Alternative:
    """Every task on ``backend`` alone: how many it could not run (and mostly why), else
    the finish (seconds from the first submission to the last end) and cost, with the
    cores and wait assumed (``cores`` None: never full; ``wait`` None: not known, 0)."""

    backend: str
    unable: int
    why: str
    finish: float | None
    cost: float | None
    cores: float | None
    wait: float | None


@frozen
class Saving:
    """This selection as routed (``finish`` seconds, ``cost``) against each backend alone;
    ``time_saved`` against the ``fastest`` alone, ``cost_saved`` against the ``cheapest``
    (positive: routing did better; None: no single backend could run every task);
    ``left_out``: attempts with no run time or end, which no estimate can place."""

    finish: float
    cost: float | None
    alternatives: tuple[Alternative, ...]
    fastest: str | None = None
    cheapest: str | None = None
    time_saved: float | None = None
    cost_saved: float | None = None
    left_out: int = 0


def waits(tasks: Iterable[Task]) -> dict[str, float]:
    """Per backend, the least wait before a start the router expected there."""
    least: dict[str, float] = {}
    for task in tasks:
        for backend, wait in task.wait.items():
            if math.isfinite(wait):  # never there: no wait to learn from
                least[backend] = min(least.get(backend, math.inf), max(0.0, wait))
    return least


def capacity(tasks: Iterable[Task]) -> dict[str, float]:
    """Per backend, the most cores its tasks held at once."""
    events: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for task in tasks:
        # an end sorts before a start at the same instant: the cores were handed over
        events[task.backend] += [(task.start, task.cpus), (task.start + task.runtime, -task.cpus)]
    most: dict[str, float] = {}
    for backend, changes in events.items():
        held = peak = 0.0
        for _, change in sorted(changes, key=lambda e: (e[0], e[1])):
            held += change
            peak = max(peak, held)
        most[backend] = peak
    return most


def schedule(ready: Sequence[tuple[float, float, float]], cores: float | None) -> float:
    """When the last of ``ready`` (ready time, cores, run time) ends on ``cores`` cores,
    first come, first served (None: never full). Each task needs at most ``cores``."""
    running: list[tuple[float, float]] = []  # (end, cores)
    free = cores if cores is not None else 0.0
    clock = last = float("-inf")
    for at, need, runtime in sorted(ready, key=lambda t: t[0]):
        start = at if cores is None else max(at, clock)
        if cores is not None:
            while running and running[0][0] <= start:
                free += heapq.heappop(running)[1]
            while free < need and running:
                end, held = heapq.heappop(running)
                start, free = max(start, end), free + held
            free -= need
            heapq.heappush(running, (start + runtime, need))
        clock = start
        last = max(last, start + runtime)
    return last


def _cost(tasks: Iterable[Task], rates: CostRates) -> float:
    return sum(rates.hourly(t.cpus, t.memory, 0) * t.runtime / 3600 for t in tasks)


def _alone(
    backend: str, runs: Mapping[str, list[Task]], wait: Mapping[str, float],
    cores: float | None, rates: CostRates | None,
) -> Alternative:  # fmt: skip
    tasks = [t for ts in runs.values() for t in ts]
    unable = [t.refused[backend] for t in tasks if backend in t.refused]
    waited = wait.get(backend)
    if unable:
        why = Counter(unable).most_common(1)[0][0]
        return Alternative(backend, len(unable), why, None, None, cores, waited)
    finish = 0.0
    for run in runs.values():
        submitted = [(t.start - wait.get(t.backend, 0.0), t) for t in run]
        first = min(at for at, _ in submitted)
        ready = [(at + (waited or 0.0), t.cpus, t.runtime) for at, t in submitted]
        finish += schedule(ready, cores) - first
    cost = None if rates is None else _cost(tasks, rates)
    return Alternative(backend, 0, "", finish, cost, cores, waited)


def estimate(tasks: Sequence[Task], rates: Mapping[str, CostRates | None]) -> Saving | None:
    """The selection as routed against each candidate alone (None: no task to compare).

    ``rates``: each backend's rates; a backend missing or None costs nothing when any
    backend has rates, and nothing is priced when none has.
    """
    if not tasks:
        return None
    runs: dict[str, list[Task]] = defaultdict(list)
    for task in tasks:
        runs[task.run_id].append(task)
    wait = waits(tasks)
    seen = capacity(tasks)
    names = list(dict.fromkeys([t.backend for t in tasks]
                               + [b for t in tasks for b in (*t.wait, *t.refused)]))  # fmt: skip
    priced = any(rates.get(n) is not None for n in names)
    if priced:  # rates come from a platform read already: its module is loaded
        from ..platforms import CostRates

    def price(name: str) -> CostRates | None:
        return (rates.get(name) or CostRates()) if priced else None

    finish = 0.0
    for run in runs.values():
        first = min(t.start - wait.get(t.backend, 0.0) for t in run)
        finish += max(t.start + t.runtime for t in run) - first
    cost = sum(_cost([t], price(t.backend) or CostRates()) for t in tasks) if priced else None
    alternatives = []
    for name in names:
        cores = None
        if name in seen:  # the most it ran at once, and room for the widest it could run
            widest = max((t.cpus for t in tasks if name not in t.refused), default=0.0)
            cores = max(seen[name], widest)
        alternatives.append(_alone(name, runs, wait, cores, price(name)))
    able = [a for a in alternatives if not a.unable and a.finish is not None]
    fastest = min(able, key=lambda a: (a.finish, a.cost or 0.0, a.backend), default=None)
    cheapest = None
    if priced:
        cheapest = min(able, key=lambda a: (a.cost or 0.0, a.finish, a.backend), default=None)
    return Saving(
        finish=finish,
        cost=cost,
        alternatives=tuple(alternatives),
        fastest=None if fastest is None else fastest.backend,
        cheapest=None if cheapest is None else cheapest.backend,
        time_saved=None if fastest is None or fastest.finish is None
        else fastest.finish - finish,
        cost_saved=None if cheapest is None or cheapest.cost is None or cost is None
        else cheapest.cost - cost,
    )  # fmt: skip
