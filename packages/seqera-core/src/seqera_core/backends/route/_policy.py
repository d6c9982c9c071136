"""The routing rule for one job: hard constraints first, then the objective.

A backend that cannot run the job at all (too little memory or too few cores on its
largest node, no GPU, a time limit shorter than the job's, the job's files on a shared
file system the backend cannot see) is never a candidate, and says why. Among the
others the job goes where the objective is best: ``finish``, the earliest estimated end
(start + run time), cost breaking a tie; ``cost``, the cheapest (the platform's hourly
rates times the run time), the earliest end breaking a tie. A job no backend can run is
refused with every backend's reason, before anything of its batch is submitted.

When a job would start is estimated from a backend's :class:`Load`: the cores free now,
when running jobs release theirs, and the jobs queued before it (:func:`start_after`).

A decision is kept as :attr:`Choice.record` (JSON: the objective, the backend, the
reason in words and every verdict's numbers as the policy had them), so the report reads
the estimates back exactly; :func:`said` gives the words.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Iterable, Sequence
from typing import Any

from attrs import field, frozen

from ...errors import UsageError
from ...models import ResourceRequest
from ...units import GIB

__all__ = [
    "OBJECTIVES",
    "Choice",
    "Limits",
    "Load",
    "Option",
    "Unroutable",
    "choose",
    "refusal",
    "said",
    "saved_rate",
    "start_after",
]

#: What a job's backend is chosen by.
OBJECTIVES = ("finish", "cost", "cost-per-hour-saved")


class Unroutable(UsageError):
    """No backend can run a job (refused like a job no queue can run: exit 2 on a CLI);
    the message names each backend's reason."""


def _pairs(values: Iterable[tuple[float, float]]) -> tuple[tuple[float, float], ...]:
    return tuple((float(a), float(b)) for a, b in values)


def _options(values: Iterable[Option]) -> tuple[Option, ...]:
    return tuple(values)


@frozen
class Limits:
    """What one backend can run at all; ``None``: no limit known."""

    cpus: float | None = None
    memory: int | None = None
    walltime: int | None = None
    gpus: int | None = 0
    #: Jobs there see the submit host's files (local, a cluster's shared file system).
    shared_fs: bool = True
    #: Queues (partitions) it has; empty: it has none (a job naming one cannot go there).
    queues: tuple[str, ...] = ()
    #: Why it takes no job now (its scheduler did not answer, no such partition).
    down: str | None = None


@frozen
class Load:
    """How busy a backend is: ``free`` cores now, ``releases`` (seconds from now, cores)
    as its running jobs end, ``queued`` (cores, run seconds) of the jobs waiting before a
    new one, in their order, ``not_before`` the scheduler's own earliest start for a job
    queued now (``squeue --start``), and ``overhead`` the seconds between submission and
    the engine seeing the job end that are not the job's own (a scheduler's cycle, a
    status poll, a container's start)."""

    free: float
    releases: tuple[tuple[float, float], ...] = field(default=(), converter=_pairs)
    queued: tuple[tuple[float, float], ...] = field(default=(), converter=_pairs)
    not_before: float = 0.0
    overhead: float = 0.0


@frozen
class Option:
    """One backend's verdict on one job: why it cannot run it, or when it would start,
    how long it would run and what it would cost."""

    backend: str
    refused: str | None = None
    start: float = 0.0
    runtime: float = 0.0
    cost: float = 0.0

    @property
    def finish(self) -> float:
        """Seconds from now until the job would end there."""
        return self.start + self.runtime


@frozen
class Choice:
    """Where a job goes, in words for its labels and the history, and every verdict."""

    backend: str
    reason: str
    options: tuple[Option, ...] = field(converter=_options)
    objective: str = "finish"

    @property
    def record(self) -> str:
        """The decision as a job's handle and the history keep it: JSON with the
        ``objective``, the ``backend``, the ``reason`` in words, and each option's
        ``start``, ``runtime`` (seconds from the decision; null: it would never start)
        and ``cost``, or why it was ``refused``."""
        options: list[dict[str, Any]] = []
        for o in self.options:
            if o.refused is not None:
                options.append({"backend": o.backend, "refused": o.refused})
            else:
                numbers = {"start": o.start, "runtime": o.runtime, "cost": o.cost}
                options.append({"backend": o.backend} | {k: _finite(v) for k, v in numbers.items()})
        return json.dumps({"objective": self.objective, "backend": self.backend,
                           "reason": self.reason, "options": options}, allow_nan=False)  # fmt: skip


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def said(route: str) -> str:
    """The words of a decision :attr:`Choice.record` kept (a text that is not one, as it is)."""
    try:
        decision = json.loads(route)
    except ValueError:
        return route
    reason = decision.get("reason") if isinstance(decision, dict) else None
    return reason if isinstance(reason, str) else route


def refusal(limits: Limits, request: ResourceRequest, *, staged: bool) -> str | None:
    """Why a backend with ``limits`` cannot run ``request`` (None: it can)."""
    if limits.down is not None:
        return limits.down
    if not limits.shared_fs and not staged:
        return "no shared file system, and the engine does not stage this job's files"
    if request.queue and request.queue not in limits.queues:
        return f"has no queue {request.queue!r}"
    if request.cpus is not None and limits.cpus is not None and request.cpus > limits.cpus:
        return f"{request.cpus:g} cores asked, its largest node has {limits.cpus:g}"
    if request.memory is not None and limits.memory is not None and request.memory > limits.memory:
        return (
            f"{request.memory / GIB:.3g} GiB asked, its largest node has {limits.memory / GIB:.3g}"
        )
    gpus = request.accelerator.count if request.accelerator is not None else 0
    if gpus and limits.gpus is not None and gpus > limits.gpus:
        return f"{gpus} GPUs asked, it has {limits.gpus or 'none'}"
    if request.time is not None and limits.walltime is not None and request.time > limits.walltime:
        return f"{request.time} s asked, its time limit is {limits.walltime} s"
    return None


def start_after(load: Load, cpus: float) -> float:
    """Seconds from now until a job of ``cpus`` cores queued behind ``load.queued`` starts
    (infinite when the cores it needs are never released).

    First come, first served, as a list scheduler: each queued job starts once enough
    cores are free, holds them for its run time, and releases them; backfill (a small
    job overtaking a wide one) is not counted, so the estimate errs late, not early.
    """
    events = [(max(0.0, when), cores) for when, cores in load.releases]
    heapq.heapify(events)
    free, now = load.free, 0.0
    for need, runtime in (*load.queued, (cpus, 0.0)):
        while free < need and events:
            now, cores = heapq.heappop(events)
            free += cores
        if free < need:
            if runtime:  # wider than everything that will ever be free: it never starts
                continue
            return float("inf")
        free -= need
        if runtime:
            heapq.heappush(events, (now + runtime, need))
    return max(now, load.not_before) + load.overhead


def choose(options: Sequence[Option], objective: str, ceiling: float | None = None) -> Choice:
    """The best of ``options`` for ``objective`` (``ceiling``: the most extra cost per
    hour saved that ``cost-per-hour-saved`` pays).

    Raises:
        Unroutable: every option is refused.
        UsageError: ``cost-per-hour-saved`` without a ``ceiling``.
    """
    able = [o for o in options if o.refused is None]
    if not able:
        raise Unroutable("no backend can run it: " + _reasons(options))
    if objective == "cost-per-hour-saved":
        return _within_ceiling(options, able, ceiling)
    if objective == "cost":
        best = min(able, key=lambda o: (round(o.cost, 6), o.finish))
        measure = f"cost {best.cost:.4g}"
    else:
        best = min(able, key=lambda o: (o.finish, o.cost))
        measure = f"finish in {_seconds(best.finish)}"
    return _said(options, best, objective, measure)


def saved_rate(option: Option, cheapest: Option) -> float:
    """Extra cost per hour of finish time ``option`` saves against ``cheapest`` (infinite
    when it saves none; 0 when it costs no more or ``cheapest`` never starts)."""
    extra = max(0.0, option.cost - cheapest.cost)
    saved = cheapest.finish - option.finish
    if saved <= 0:
        return float("inf")
    if extra == 0 or saved == float("inf"):
        return 0.0
    return extra / (saved / 3600)


def _within_ceiling(options: Sequence[Option], able: list[Option], ceiling: float | None) -> Choice:
    if ceiling is None:
        raise UsageError(
            "route.max_cost_per_hour_saved: not set; the objective cost-per-hour-saved "
            "needs it (the most extra cost per hour of finish time saved, a number >= 0)"
        )
    cheapest = min(able, key=lambda o: (round(o.cost, 6), o.finish))
    worth = [o for o in able if o is cheapest or saved_rate(o, cheapest) <= ceiling]
    best = min(worth, key=lambda o: (o.finish, o.cost))
    if best is cheapest:
        measure = f"cheapest at {best.cost:.4g}, finish in {_seconds(best.finish)}"
    else:
        rate = saved_rate(best, cheapest)
        measure = (
            f"{best.cost - cheapest.cost:.4g} more than {cheapest.backend} to finish "
            f"{_seconds(cheapest.finish - best.finish)} sooner, {rate:.4g} per hour saved "
            f"(at most {ceiling:g})"
        )
    return _said(options, best, "cost-per-hour-saved", measure, cheapest, ceiling)


def _said(
    options: Sequence[Option],
    best: Option,
    objective: str,
    measure: str,
    cheapest: Option | None = None,
    ceiling: float | None = None,
) -> Choice:
    others = [_verdict(o, objective, cheapest, ceiling) for o in options if o is not best]
    reason = f"{objective}: {best.backend} {measure}"
    if others:
        reason += " (" + "; ".join(others) + ")"
    return Choice(best.backend, reason, options, objective)


def _verdict(
    option: Option, objective: str, cheapest: Option | None = None, ceiling: float | None = None
) -> str:
    if option.refused is not None:
        return f"{option.backend} cannot: {option.refused}"
    if objective == "cost":
        return f"{option.backend} {option.cost:.4g}"
    if cheapest is not None and ceiling is not None and option is not cheapest:
        rate = saved_rate(option, cheapest)
        said = "saves no time" if rate == float("inf") else f"{rate:.4g} per hour saved"
        return f"{option.backend} {option.cost:.4g}, {_seconds(option.finish)}, {said}"
    if cheapest is not None:
        return f"{option.backend} {option.cost:.4g}, {_seconds(option.finish)}"
    return f"{option.backend} {_seconds(option.finish)}"


def _reasons(options: Iterable[Option]) -> str:
    return "; ".join(f"{o.backend}: {o.refused}" for o in options)


def _seconds(value: float) -> str:
    return "never" if value == float("inf") else f"{value:.3g} s"
