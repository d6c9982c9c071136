"""Cost-aware multi-instance scheduling: Seven Bridges' CAVATICA algorithm, exactly.

```
schedule(instances, jobs):
    unscheduled = prioritize_jobs(jobs)
    while unscheduled:
        unscheduled = fit_jobs(instances, unscheduled)
        instances += allocate_new_instances(unscheduled)
    release_empty_instances(instances)
    return instances
```

The choices the published sketch leaves open, made here once:

- A job *requires* the type its ``instance_type`` hint names, else the cheapest type of
  the catalogue whose vCPUs, memory and GPUs all cover it (the first listed among equal
  prices). :func:`prioritize_jobs` orders jobs by the price of that type, dearest first;
  equal prices keep the input order.
- :func:`fit_jobs` tries each job on the allocated instances with the *least remaining
  resources first*: remaining vCPUs, memory and GPUs, each divided by the largest value
  of that dimension in the catalogue, summed (:func:`remaining_key`); ties go to the
  instance allocated first. A job fits when the instance has at least the job's vCPUs,
  memory and GPUs left and the job's hint, if any, names the instance's type.
- vCPUs are counted in thousandths of a core (a job's rounded up, a type's down), so
  sums are exact and a job never receives less than it asked for.

:func:`schedule` returns exactly the plan of that loop, but fast: after the first
``fit_jobs`` pass no waiting job fits an older instance (they only lose room), so each
later pass can only fill the instance just allocated, taking the waiting jobs that fit
in priority order. Those are found with segment trees of the waiting jobs' smallest
demands (one per hint and vCPU band) instead of a scan of the whole queue, and a heap
of each band's next candidate (:class:`~seqera_core.planning._mintree.Packer`); the first pass
bisects per-type lists of instances sorted by remaining resources. The tests check the
result equals the literal loop on random inputs; ``benchmarks/plan.py`` times it.

``lookahead`` is a variant, not the published algorithm. A new instance does not get
the first waiting job's cheapest type: for each *shape* of the catalogue (memory and
GPUs per vCPU: a family of sizes, such as EC2's c7i, m7i, r7i) the cheapest type that
holds the first job is filled on trial, first fit in queue order as above, and the one
whose fill is worth the most per dollar is allocated. A job's worth is its demand at
the dual prices of the LP bound over all waiting jobs (:mod:`seqera_core.planning._lpbound`),
under which no type is worth more than its price and the LP's optimal mix exactly its
price; so worth per dollar says how close an instance comes to a plan nothing beats. On
whole instances cut into jobs it lands within 1 % of the optimum (the published
algorithm: 2-2.5 % above; ``tests/seqera_core/test_lpbound.py``).

:func:`lower_bound` is that LP's optimum (vCPUs, memory and GPUs covered together, the
instances hinted jobs force counted whole), never below the single-dimension bounds it
also reports.

Jobs whose requirements are known only at run time are added to an existing plan with
:meth:`Plan.extend`, which runs the same loop with the plan's instances as the start.

The modules behind it, one step each: :mod:`~seqera_core.planning._model` (jobs, instances,
their integer units), :mod:`~seqera_core.planning._types` (the type a job requires, the
lookahead's candidates), :mod:`~seqera_core.planning._loop` (the published steps and the
first pass over allocated instances), :mod:`~seqera_core.planning._fill` (the fast fill and
the lookahead), :mod:`~seqera_core.planning._mintree` (its search) and
:mod:`~seqera_core.planning._lpbound` (the bound).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from operator import itemgetter

from attrs import frozen

from ._fill import fill_new_instances
from ._loop import (
    State,
    allocate_new_instances,
    fit_jobs,
    prioritize_jobs,
    release_empty_instances,
    remaining_key,
)
from ._lpbound import lp_bound
from ._model import Instance, Job, LowerBound, capacity, check_cpus, millicores
from ._types import Types
from .catalogue import Catalogue, InstanceType

__all__ = [
    "Instance",
    "Job",
    "LowerBound",
    "Plan",
    "allocate_new_instances",
    "check_cpus",
    "fit_jobs",
    "lower_bound",
    "millicores",
    "prioritize_jobs",
    "release_empty_instances",
    "remaining_key",
    "required_type",
    "schedule",
]


@frozen
class Plan:
    """Instances with their jobs, from :func:`schedule`; :meth:`extend` adds jobs."""

    catalogue: Catalogue
    instances: tuple[Instance, ...]

    @property
    def hourly_cost(self) -> float:
        """The price of one hour of every instance in the plan."""
        return sum(i.type.price for i in self.instances)

    @property
    def jobs(self) -> tuple[Job, ...]:
        """Every placed job, instance by instance."""
        return tuple(j for i in self.instances for j in i.jobs)

    def lower_bound(self) -> LowerBound:
        """The lower bound on the hourly cost of any plan for this plan's jobs."""
        return lower_bound(self.catalogue, self.jobs)

    def extend(self, jobs: Iterable[Job], *, lookahead: bool = False) -> Plan:
        """This plan with ``jobs`` added (jobs that became ready at run time); placed jobs
        stay where they are."""
        return schedule(self.catalogue, jobs, self.instances, lookahead=lookahead)


def required_type(catalogue: Catalogue, job: Job) -> InstanceType:
    """The type a job requires: the one its hint names, else the cheapest that covers it.

    Raises ResourceError naming the job, the type and what is missing when the hinted
    type is unknown or too small; UsageError when no type covers the job.
    """
    return Types(catalogue).required(job)


def schedule(
    catalogue: Catalogue,
    jobs: Iterable[Job],
    instances: Sequence[Instance] = (),
    *,
    lookahead: bool = False,
) -> Plan:
    """The plan of the CAVATICA loop for ``jobs``, starting from ``instances``.

    ``lookahead`` is a variant, not the published algorithm: a new instance gets the type
    (the cheapest holding the first waiting job in each shape of the catalogue) whose
    trial fill from the queue is worth the most per dollar at the LP bound's dual prices,
    instead of the first job's cheapest type (see the module's docstring).
    """
    types = Types(catalogue)
    priced = [(-(t := types.required(job)).price, job, t) for job in jobs]
    # every hint is checked above, before anything is allocated; sort() is stable, so
    # equal prices keep the input order
    priced.sort(key=itemgetter(0))
    state = State(catalogue, instances)
    if instances:
        priced = [entry for entry in priced if not state.fit(entry[1])]
    waiting, required = [entry[1] for entry in priced], [entry[2] for entry in priced]
    made = fill_new_instances(types, waiting, required)
    if lookahead:
        # The lookahead's choice is greedy, one instance at a time: on some queues (the
        # README's three jobs) it ends dearer than the published loop. Both are cheap to
        # compute, so it never returns the dearer one (issue 29); a tie keeps the
        # published plan.
        ahead = fill_new_instances(types, waiting, required, True)
        if _price(ahead) < _price(made):
            made = ahead
    start = state.next_id
    return Plan(
        catalogue,
        release_empty_instances(state.instances())
        + tuple(Instance(start + n, t, tuple(placed)) for n, (t, placed) in enumerate(made)),
    )


def _price(made: Sequence[tuple[InstanceType, Sequence[Job]]]) -> float:
    return sum(t.price for t, _ in made)


def lower_bound(catalogue: Catalogue, jobs: Iterable[Job]) -> LowerBound:
    """No plan for ``jobs`` costs less per hour than this.

    ``per_dimension`` holds, for every dimension, the jobs' total demand times the
    cheapest price per unit of it in the catalogue. ``hourly`` is the optimum of the
    linear-programming relaxation that covers vCPUs, memory and GPUs *together* (and
    counts the instances hinted jobs force), see :mod:`seqera_core.planning._lpbound` for the
    derivation and why it is a valid bound; it is never below any single dimension's.
    ``dimension`` names the single dimension when that alone is as strong, else the
    dimensions the LP's prices charge for, joined with ``+`` (``cpus+memory``).
    """
    totals = [0, 0, 0]
    hinted: dict[str, list[int]] = {}
    rounded: dict[float, int] = {}
    for job in jobs:
        cpus = rounded.get(job.cpus)
        if cpus is None:
            cpus = rounded[job.cpus] = millicores(job.cpus)
        totals[0] += cpus
        totals[1] += job.memory
        totals[2] += job.gpus
        if job.instance_type is not None:
            own = hinted.setdefault(job.instance_type, [0, 0, 0])
            own[0], own[1], own[2] = own[0] + cpus, own[1] + job.memory, own[2] + job.gpus
    per: dict[str, float] = {}
    capacities = [capacity(t) for t in catalogue.types]
    for n, name in enumerate(_DIMENSIONS):
        prices = [
            t.price / c[n] for t, c in zip(catalogue.types, capacities, strict=True) if c[n] > 0
        ]
        if totals[n] and prices:
            per[name] = totals[n] * min(prices)
    if not per:
        return LowerBound(0.0, None, per)
    dimension = max(per, key=lambda k: per[k])
    # a hint names one type: its jobs count against the first type of that name
    forced: list[tuple[float, float, float]] = []
    for t in catalogue.types:
        own = hinted.pop(t.name, [])
        forced.append((float(own[0]), float(own[1]), float(own[2])) if own else (0.0, 0.0, 0.0))
    lp, charged = lp_bound(
        capacities,
        [t.price for t in catalogue.types],
        (float(totals[0]), float(totals[1]), float(totals[2])),
        forced,
    )
    if lp > per[dimension] * (1 + 1e-9):
        return LowerBound(lp, "+".join(charged) or dimension, per)
    return LowerBound(per[dimension], dimension, per)


_DIMENSIONS = ("cpus", "memory", "gpus")
