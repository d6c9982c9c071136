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
of each band's next candidate (:class:`~seqera_core._mintree.Packer`); the first pass
bisects per-type lists of instances sorted by remaining resources. The tests check the
result equals the literal loop on random inputs; ``benchmarks/plan.py`` times it.

``lookahead`` is a variant, not the published algorithm. A new instance does not get
the first waiting job's cheapest type: for each *shape* of the catalogue (memory and
GPUs per vCPU: a family of sizes, such as EC2's c7i, m7i, r7i) the cheapest type that
holds the first job is filled on trial, first fit in queue order as above, and the one
whose fill is worth the most per dollar is allocated. A job's worth is its demand at
the dual prices of the LP bound over all waiting jobs (:mod:`seqera_core._lpbound`),
under which no type is worth more than its price and the LP's optimal mix exactly its
price; so worth per dollar says how close an instance comes to a plan nothing beats. On
whole instances cut into jobs it lands within 1 % of the optimum (the published
algorithm: 2-2.5 % above; ``tests/seqera_core/test_lpbound.py``).

:func:`lower_bound` is that LP's optimum (vCPUs, memory and GPUs covered together, the
instances hinted jobs force counted whole), never below the single-dimension bounds it
also reports.

Jobs whose requirements are known only at run time are added to an existing plan with
:meth:`Plan.extend`, which runs the same loop with the plan's instances as the start.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from attrs import field, frozen

from ._lpbound import dual_prices, lp_bound
from ._mintree import Group, MinTree, Packer
from .catalogue import Catalogue, InstanceType
from .errors import ResourceError, UsageError
from .units import format_bytes

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


# Larger counts are no machine's (int64, what schedulers store), and past 2**1023 a count
# no longer converts to the floats that utilisation and prices are computed in.
_LARGEST = 2**63 - 1


def check_cpus(value: Any) -> None:
    """Raise ResourceError unless ``value`` is a number of cores > 0 that floats can hold."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not 0 < value <= _LARGEST
        or not math.isfinite(value)
    ):
        raise ResourceError("cpus", value, f"a number of cores greater than 0, at most {_LARGEST}")


def _cpus(_: Any, attribute: Any, value: Any) -> None:
    check_cpus(value)


def _whole(name: str, minimum: int) -> Any:
    def check(_: Any, attribute: Any, value: Any) -> None:
        if (
            isinstance(value, bool)
            or not isinstance(value, int)
            or not minimum <= value <= _LARGEST
        ):
            raise ResourceError(name, value, f"a whole number from {minimum} to {_LARGEST}")

    return check


@frozen
class Job:
    """A job to place: vCPUs, memory in bytes, GPUs and an optional instance-type hint."""

    name: str
    cpus: float = field(validator=_cpus)
    memory: int = field(validator=_whole("memory", 1))
    gpus: int = field(default=0, validator=_whole("gpus", 0))
    instance_type: str | None = None


@frozen
class Instance:
    """One planned instance: its number in the plan, its type and the jobs placed on it."""

    id: int
    type: InstanceType
    jobs: tuple[Job, ...] = ()

    @property
    def used_cpus(self) -> float:
        """vCPUs the jobs take (each rounded up to a thousandth of a core)."""
        return sum(millicores(j.cpus) for j in self.jobs) / 1000

    @property
    def used_memory(self) -> int:
        """Bytes of memory the jobs take."""
        return sum(j.memory for j in self.jobs)

    @property
    def used_gpus(self) -> int:
        """GPUs the jobs take."""
        return sum(j.gpus for j in self.jobs)


@frozen
class LowerBound:
    """No plan costs less per hour: per dimension, demand times the cheapest unit price."""

    hourly: float
    dimension: str | None
    per_dimension: Mapping[str, float] = field(factory=dict)


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


# --- the steps ---------------------------------------------------------------------


def millicores(cpus: float) -> int:
    """vCPUs in thousandths of a core, rounded up (``0.1`` is 100, not 101)."""
    if isinstance(cpus, int):
        return cpus * 1000
    scaled = cpus * 1000
    if scaled.is_integer() and scaled >= 1:
        return int(scaled)  # 0.5, 0.25, 1.0: exact, no rounding to decide
    nearest = round(scaled)
    # 0.1 * 1000 is 100.00000000000001 in binary floating point: that is 100, not 101
    whole = int(nearest) if abs(scaled - nearest) < 1e-6 else math.ceil(scaled)
    return max(whole, 1)  # a job with cpus > 0 takes room, however little


def _capacity(t: InstanceType) -> tuple[int, int, int]:
    cores = t.vcpus * 1000
    nearest = round(cores)
    whole = int(nearest) if abs(cores - nearest) < 1e-6 else math.floor(cores)
    return whole, t.memory, t.gpus


def _demand(job: Job) -> tuple[int, int, int]:
    return millicores(job.cpus), job.memory, job.gpus


def _covers(capacity: tuple[int, int, int], demand: tuple[int, int, int]) -> bool:
    return capacity[0] >= demand[0] and capacity[1] >= demand[1] and capacity[2] >= demand[2]


def _missing(t: InstanceType, job: Job) -> str:
    have, need = _capacity(t), _demand(job)
    parts = []
    if have[0] < need[0]:
        parts.append(f"{job.cpus} vCPUs (it has {t.vcpus})")
    if have[1] < need[1]:
        parts.append(f"{format_bytes(job.memory)} memory (it has {format_bytes(t.memory)})")
    if have[2] < need[2]:
        parts.append(f"{job.gpus} GPUs (it has {t.gpus})")
    return ", ".join(parts)


def required_type(catalogue: Catalogue, job: Job) -> InstanceType:
    """The type a job requires: the one its hint names, else the cheapest that covers it.

    Raises ResourceError naming the job, the type and what is missing when the hinted
    type is unknown or too small; UsageError when no type covers the job.
    """
    return _Types(catalogue).required(job)


class _Types:
    """A catalogue's capacities, cheapest first, and the answers already given."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        # sorted() is stable: among equal prices the first listed type wins
        self.by_price = sorted(
            ((t, _capacity(t)) for t in catalogue.types), key=lambda entry: entry[0].price
        )
        self.by_name = {t.name: (t, _capacity(t)) for t in reversed(catalogue.types)}
        self.known: dict[tuple[int, int, int], InstanceType] = {}
        # the types of each shape (memory and GPUs per vCPU), cheapest first
        shapes: dict[tuple[float, float], list[tuple[InstanceType, tuple[int, int, int]]]] = {}
        for t, room in self.by_price:
            per = t.vcpus or math.inf  # a type without vCPUs is a shape of its own
            shapes.setdefault((t.memory / per, t.gpus / per), []).append((t, room))
        self.shapes = list(shapes.values())

    def required(self, job: Job) -> InstanceType:
        demand = _demand(job)
        if job.instance_type is not None:
            return self._hinted(job, demand)
        found = self.known.get(demand)
        if found is not None:
            return found
        cpus, memory, gpus = demand
        for t, (c, m, g) in self.by_price:
            if c >= cpus and m >= memory and g >= gpus:
                self.known[demand] = t
                return t
        largest = max(self.catalogue.types, key=lambda t: (t.vcpus, t.memory, t.gpus))
        raise UsageError(
            f"job {job.name}: no instance type of {self.catalogue.source} holds {job.cpus} "
            f"vCPUs, {format_bytes(job.memory)} memory and {job.gpus} GPUs "
            f"(the largest, {largest.name}, lacks {_missing(largest, job)})"
        )

    def candidates(
        self, demand: tuple[int, int, int], hint: str | None
    ) -> list[tuple[InstanceType, tuple[int, int, int]]]:
        """The types the lookahead tries for a new instance whose first job has this
        demand: per shape (memory and GPUs per vCPU, a family of sizes), the cheapest that
        holds it; types with GPUs only for a job that needs one (or when nothing else holds
        it). A hinted job has its one type."""
        if hint is not None:
            entry = self.by_name[hint]
            return [entry]
        cpus, memory, gpus = demand
        found = []
        for gpus_too in (False, True):
            for shape in self.shapes:
                if shape[0][1][2] and not (gpus or gpus_too):
                    continue  # no GPU for a job that needs none, while others hold it
                for entry in shape:
                    room = entry[1]
                    if room[0] >= cpus and room[1] >= memory and room[2] >= gpus:
                        found.append(entry)
                        break
            if found:
                break
        return found

    def _hinted(self, job: Job, demand: tuple[int, int, int]) -> InstanceType:
        entry = self.by_name.get(job.instance_type or "")
        if entry is None:
            names = ", ".join(t.name for t in self.catalogue.types)
            raise ResourceError(
                f"job {job.name}: instance_type", job.instance_type, f"a type of {names}"
            )
        if not _covers(entry[1], demand):
            raise ResourceError(
                f"job {job.name}: instance_type",
                job.instance_type,
                f"a type that can hold the job; {entry[0].name} lacks {_missing(entry[0], job)}",
            )
        return entry[0]


def prioritize_jobs(catalogue: Catalogue, jobs: Iterable[Job]) -> tuple[Job, ...]:
    """Jobs ordered by the price of the type each requires, dearest first (stable).

    Every hint is checked here, so a bad one fails before anything is allocated.
    """
    types = _Types(catalogue)
    priced = [(-types.required(job).price, n, job) for n, job in enumerate(jobs)]
    priced.sort(key=lambda entry: (entry[0], entry[1]))
    return tuple(job for _, _, job in priced)


def remaining_key(catalogue: Catalogue) -> Callable[[Instance], tuple[float, int]]:
    """The order of :func:`fit_jobs`: least remaining resources first, then oldest first.

    Remaining vCPUs, memory and GPUs are each divided by the catalogue's largest value
    of that dimension and summed.
    """
    scale = _Scale(catalogue)

    def key(instance: Instance) -> tuple[float, int]:
        capacity = _capacity(instance.type)
        used = _used(instance.jobs)
        return scale.score(
            capacity[0] - used[0], capacity[1] - used[1], capacity[2] - used[2]
        ), instance.id

    return key


def fit_jobs(
    catalogue: Catalogue, instances: Sequence[Instance], jobs: Sequence[Job]
) -> tuple[tuple[Instance, ...], tuple[Job, ...]]:
    """Put each job, in order, on the first instance with room for it, least remaining
    resources first; returns the instances with their jobs and the jobs that did not fit."""
    state = _State(catalogue, instances)
    left = [job for job in jobs if not state.fit(job)]
    return state.instances(), tuple(left)


def allocate_new_instances(
    catalogue: Catalogue, unscheduled: Sequence[Job], next_id: int = 1
) -> tuple[Instance, ...]:
    """One empty instance of the type the first unscheduled job requires (none if no job)."""
    if not unscheduled:
        return ()
    return (Instance(next_id, _Types(catalogue).required(unscheduled[0])),)


def release_empty_instances(instances: Iterable[Instance]) -> tuple[Instance, ...]:
    """The instances that hold at least one job."""
    return tuple(i for i in instances if i.jobs)


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
    types = _Types(catalogue)
    priced = [(-types.required(job).price, n, job) for n, job in enumerate(jobs)]
    # every hint is checked above, before anything is allocated
    priced.sort(key=lambda entry: (entry[0], entry[1]))
    queue = [job for _, _, job in priced]
    state = _State(catalogue, instances)
    waiting = [job for job in queue if not state.fit(job)] if instances else queue
    _fill_new_instances(types, state, waiting, lookahead)
    return Plan(catalogue, release_empty_instances(state.instances()))


def lower_bound(catalogue: Catalogue, jobs: Iterable[Job]) -> LowerBound:
    """No plan for ``jobs`` costs less per hour than this.

    ``per_dimension`` holds, for every dimension, the jobs' total demand times the
    cheapest price per unit of it in the catalogue. ``hourly`` is the optimum of the
    linear-programming relaxation that covers vCPUs, memory and GPUs *together* (and
    counts the instances hinted jobs force), see :mod:`seqera_core._lpbound` for the
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
    capacities = [_capacity(t) for t in catalogue.types]
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


# --- the machinery -----------------------------------------------------------------


def _used(jobs: Iterable[Job]) -> tuple[int, int, int]:
    cpus = memory = gpus = 0
    for job in jobs:
        cpus += millicores(job.cpus)
        memory += job.memory
        gpus += job.gpus
    return cpus, memory, gpus


class _Scale:
    """The ``least remaining`` score; float division and addition are monotone, so an
    instance with at least a job's demand left scores at least the demand's own score."""

    def __init__(self, catalogue: Catalogue) -> None:
        capacities = [_capacity(t) for t in catalogue.types]
        self.cpus = max(c[0] for c in capacities)
        self.memory = max(c[1] for c in capacities)
        self.gpus = max(c[2] for c in capacities)

    def score(self, cpus: int, memory: int, gpus: int) -> float:
        value = cpus / self.cpus + memory / self.memory
        return value + gpus / self.gpus if self.gpus else value


class _Open:
    """An instance while planning: remaining room and the jobs placed so far."""

    __slots__ = ("cpus", "gpus", "id", "jobs", "memory", "type")

    def __init__(self, id: int, type: InstanceType, jobs: Sequence[Job] = ()) -> None:
        self.id, self.type, self.jobs = id, type, list(jobs)
        capacity = _capacity(type)
        used = _used(jobs) if jobs else (0, 0, 0)
        self.cpus = capacity[0] - used[0]
        self.memory = capacity[1] - used[1]
        self.gpus = capacity[2] - used[2]


class _State:
    """Allocated instances, kept per type in lists sorted by (remaining score, id)."""

    def __init__(self, catalogue: Catalogue, instances: Sequence[Instance]) -> None:
        self.scale = _Scale(catalogue)
        self.open = [_Open(i.id, i.type, i.jobs) for i in instances]
        self.by_id = {o.id: o for o in self.open}
        self.sorted: dict[str, list[tuple[float, int]]] = {}
        for o in self.open:
            self._insert(o)
        self.next_id = max((i.id for i in instances), default=0) + 1
        self.capacity = {t.name: _capacity(t) for t in catalogue.types}
        self.capacity.update((o.type.name, _capacity(o.type)) for o in self.open)

    def _insert(self, o: _Open) -> None:
        # A full instance (no vCPU or no memory left) can take no job: leave it out.
        if o.cpus > 0 and o.memory > 0:
            insort(self.sorted.setdefault(o.type.name, []), self._key(o))

    def _key(self, o: _Open) -> tuple[float, int]:
        return self.scale.score(o.cpus, o.memory, o.gpus), o.id

    def fit(self, job: Job) -> bool:
        """Place ``job`` on the least-remaining instance with room for it, if any."""
        cpus, memory, gpus = _demand(job)
        floor = (self.scale.score(cpus, memory, gpus), -1)
        names = (job.instance_type,) if job.instance_type is not None else self.sorted
        best: tuple[float, int] | None = None
        for name in names:
            entries = self.sorted.get(name)
            if not entries:
                continue
            room = self.capacity[name]
            if room[0] < cpus or room[1] < memory or room[2] < gpus:
                continue  # not even an empty one of this type could take the job
            for n in range(bisect_left(entries, floor), len(entries)):
                entry = entries[n]
                if best is not None and entry > best:
                    break
                o = self.by_id[entry[1]]
                if o.cpus >= cpus and o.memory >= memory and o.gpus >= gpus:
                    best = entry
                    break
        if best is None:
            return False
        o = self.by_id[best[1]]
        entries = self.sorted[o.type.name]
        del entries[bisect_left(entries, best)]
        o.cpus, o.memory, o.gpus = o.cpus - cpus, o.memory - memory, o.gpus - gpus
        o.jobs.append(job)
        self._insert(o)
        return True

    def allocate(self, type: InstanceType) -> _Open:
        o = _Open(self.next_id, type)
        self.next_id += 1
        self.open.append(o)
        self.by_id[o.id] = o
        return o

    def instances(self) -> tuple[Instance, ...]:
        return tuple(Instance(o.id, o.type, tuple(o.jobs)) for o in self.open)


_CPU_GROUPS = 32


def _fill_new_instances(
    types: _Types, state: _State, waiting: Sequence[Job], lookahead: bool = False
) -> None:
    """The rest of the loop: allocate for the first waiting job, fill that instance with
    the waiting jobs that fit, in queue order; repeat until nobody waits.

    Waiting jobs are grouped by hint and by vCPU band (one band per value when there are
    few, the usual 1, 2, 4 cores; else quantiles). Within a group the tree's minima then
    prune almost exactly on memory; one tree over jobs of mixed sizes could search most
    of itself to learn that no job has both few cores and little memory.

    With ``lookahead`` the type is not the first job's required one: the cheapest type
    of each shape that holds the first job is packed on trial (a type whose whole
    capacity is worth less per dollar than the best fill so far is skipped: it cannot
    win), and the fill worth the most per dollar is allocated (see :func:`schedule`).
    """
    demands = [_demand(job) for job in waiting]
    # up to _CPU_GROUPS vCPU bands: one per value when there are few, else quantiles
    values = sorted({d[0] for d in demands})
    step = max(1, -(-len(values) // _CPU_GROUPS))
    bands = values[::step]
    keys: dict[tuple[str | None, int], list[int]] = {}
    for position, job in enumerate(waiting):
        band = bands[bisect_right(bands, demands[position][0]) - 1]
        keys.setdefault((job.instance_type, band), []).append(position)
    groups: list[Group] = [
        (hint, least, positions, MinTree([demands[p] for p in positions]))
        for (hint, least), positions in keys.items()
    ]
    if not groups:
        return
    # where each waiting job sits: its index in its group's tree
    home: list[tuple[int, MinTree]] = [(0, groups[0][3])] * len(waiting)
    for _, _, positions, tree in groups:
        for local, position in enumerate(positions):
            home[position] = (local, tree)
    worth, prices = _worth(types.catalogue, demands) if lookahead else ([], (0.0, 0.0, 0.0))
    # A fill is worth at most its type's whole capacity at the dual prices: a type whose
    # capacity is worth less per dollar than the best fill so far cannot beat it.
    ceiling = {
        name: (room[0] * prices[0] + room[1] * prices[1] + room[2] * prices[2])
        / max(t.price, 1e-12)
        for name, (t, room) in types.by_name.items()
    }
    placed = [False] * len(waiting)
    packer = Packer(groups, demands, placed)
    head = 0
    while True:
        while head < len(waiting) and placed[head]:
            head += 1
        if head == len(waiting):
            return
        first = waiting[head]
        chosen = types.required(first)
        taken = packer.pack(head, chosen.name, _capacity(chosen), home[head])
        if lookahead:
            best = (sum(worth[p] for p, _, _ in taken) / max(chosen.price, 1e-12), -chosen.price)
            for t, room in types.candidates(demands[head], first.instance_type):
                if t is chosen or ceiling[t.name] < best[0]:
                    continue
                trial = packer.pack(head, t.name, room, home[head])
                score = (sum(worth[p] for p, _, _ in trial) / max(t.price, 1e-12), -t.price)
                if score > best:
                    best, chosen, taken = score, t, trial
        o = state.allocate(chosen)
        for position, local, tree in taken:
            tree.remove(local)
            placed[position] = True
            need = demands[position]
            o.cpus, o.memory, o.gpus = o.cpus - need[0], o.memory - need[1], o.gpus - need[2]
            o.jobs.append(waiting[position])
        # no need to index it for fit_jobs: nothing later can go to an older instance


def _worth(
    catalogue: Catalogue, demands: Sequence[tuple[int, int, int]]
) -> tuple[list[float], tuple[float, float, float]]:
    # Each job's worth at the LP dual prices of the whole queue (see _lpbound): no type's
    # capacity is worth more than its price, and the types of the LP's optimal mix are
    # worth exactly their price, so worth per dollar of a fill measures how close that
    # instance comes to the mix no plan can beat.
    total = (
        float(sum(d[0] for d in demands)),
        float(sum(d[1] for d in demands)),
        float(sum(d[2] for d in demands)),
    )
    capacities = [_capacity(t) for t in catalogue.types]
    _, y = dual_prices(capacities, [t.price for t in catalogue.types], total)
    return [d[0] * y[0] + d[1] * y[1] + d[2] * y[2] for d in demands], y
