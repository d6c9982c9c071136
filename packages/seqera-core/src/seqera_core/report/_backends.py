"""Per backend: what ran where, its time and cost, and why the router sent it there.

Shown when the selection ran on more than one backend (a routed run, or ``--since`` over
runs on different backends); a single-backend selection has no such section. For each
backend: its tasks and attempts, the run hours, the cores reserved and kept busy and the
memory requested and used (the areas of :mod:`._figures`, over its attempts alone), its
cost at its own rates, and the routing reasons in a few words with how many jobs each
(:mod:`._reasons`). Its own rates: the platform's (default queue, else first queue; as
the whole report prices) when the platform's scheduler is that backend, else none, as
the routing backend prices a candidate; a backend without rates costs nothing once any
has rates. With the reasons, :mod:`._routing` estimates what routing saved.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs
from attrs import frozen

from ..history import TaskRecord
from ._figures import Usage, cost_rates, usage
from ._reasons import Counted, Reason, parse, summarise
from ._routing import Saving, Task, estimate

if TYPE_CHECKING:  # a platform file's reader (YAML, the catalogues): only with --platform
    from ..platforms import CostRates, Platform

__all__ = ["BackendFigures", "Routing", "backend_rates", "routing"]


@frozen
class BackendFigures:
    """One backend's share of the selection (areas as in :class:`~._figures.Usage`)."""

    backend: str
    tasks: int  # distinct (run, task)
    attempts: int
    failed: int
    run_hours: float
    cpus: Usage  # core-hours
    memory: Usage  # GB-hours
    cost: float | None  # at its rates; None when no backend has rates
    reasons: tuple[Counted, ...]  # why its jobs went there, in a few words, most first


@frozen
class Routing:
    """Every backend's figures, most tasks first, and the saving estimate (None when no
    attempt could be placed in time)."""

    backends: tuple[BackendFigures, ...]
    saving: Saving | None


def backend_rates(platform: Platform | None, backend: str) -> CostRates | None:
    """The rates ``backend``'s attempts are priced at (None: it has none)."""
    if platform is None or platform.scheduler != backend:
        return None
    return cost_rates(platform)


def _task(record: TaskRecord, reason: Reason | None) -> Task | None:
    if record.realtime is None or record.finished is None or not record.backend:
        return None
    return Task(
        run_id=record.run_id,
        backend=record.backend,
        start=record.finished - record.realtime,
        runtime=record.realtime,
        cpus=record.cpus or 1.0,
        memory=record.memory or 0,
        wait={} if reason is None else reason.start,
        refused={} if reason is None else reason.refused,
    )


def _price(records: Sequence[TaskRecord], rates: CostRates) -> float:
    return sum(rates.hourly(r.cpus or 1.0, r.memory or 0, 0) * (r.realtime or 0) / 3600
               for r in records)  # fmt: skip


def routing(records: Sequence[TaskRecord], platform: Platform | None = None) -> Routing | None:
    """The per-backend figures of ``records``, or None when they ran on one backend."""
    names = sorted({r.backend for r in records if r.backend})
    if len(names) < 2:
        return None
    reasons = {id(r): parse(r.route) if r.route else None for r in records}
    rates = {name: backend_rates(platform, name) for name in names}
    priced = any(r is not None for r in rates.values())
    if priced:  # rates come from a platform read already: its module is loaded
        from ..platforms import CostRates
    by_backend: dict[str, list[TaskRecord]] = defaultdict(list)
    for record in records:
        by_backend[record.backend or "not recorded"].append(record)
    figures = [
        BackendFigures(
            backend=name,
            tasks=len({(r.run_id, r.task_id) for r in mine}),
            attempts=len(mine),
            failed=sum(not r.succeeded for r in mine),
            run_hours=sum(r.realtime or 0 for r in mine) / 3600,
            cpus=usage(mine, "cpus"),
            memory=usage(mine, "memory"),
            cost=_price(mine, rates.get(name) or CostRates()) if priced else None,
            reasons=summarise(reasons[id(r)] for r in mine),
        )
        for name, mine in by_backend.items()
    ]
    tasks = [t for r in records if (t := _task(r, reasons[id(r)])) is not None]
    saving = estimate(tasks, rates)
    if saving is not None and len(tasks) < len(records):
        saving = attrs.evolve(saving, left_out=len(records) - len(tasks))
    return Routing(
        backends=tuple(sorted(figures, key=lambda f: (-f.tasks, f.backend))),
        saving=saving,
    )
