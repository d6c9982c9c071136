"""The published loop's steps, as the CAVATICA sketch names them, and the first
``fit_jobs`` pass over instances that are already allocated (see
:mod:`seqera_core.planning._planner`)."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Sequence

from ._model import Instance, Job, capacity, demand, used
from ._types import Types
from .catalogue import Catalogue, InstanceType

__all__ = [
    "State",
    "allocate_new_instances",
    "fit_jobs",
    "prioritize_jobs",
    "release_empty_instances",
    "remaining_key",
]


def prioritize_jobs(catalogue: Catalogue, jobs: Iterable[Job]) -> tuple[Job, ...]:
    """Jobs ordered by the price of the type each requires, dearest first (stable).

    Every hint is checked here, so a bad one fails before anything is allocated.
    """
    types = Types(catalogue)
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
        room, taken = capacity(instance.type), used(instance.jobs)
        return scale.score(room[0] - taken[0], room[1] - taken[1], room[2] - taken[2]), instance.id

    return key


def fit_jobs(
    catalogue: Catalogue, instances: Sequence[Instance], jobs: Sequence[Job]
) -> tuple[tuple[Instance, ...], tuple[Job, ...]]:
    """Put each job, in order, on the first instance with room for it, least remaining
    resources first; returns the instances with their jobs and the jobs that did not fit."""
    state = State(catalogue, instances)
    left = [job for job in jobs if not state.fit(job)]
    return state.instances(), tuple(left)


def allocate_new_instances(
    catalogue: Catalogue, unscheduled: Sequence[Job], next_id: int = 1
) -> tuple[Instance, ...]:
    """One empty instance of the type the first unscheduled job requires (none if no job)."""
    if not unscheduled:
        return ()
    return (Instance(next_id, Types(catalogue).required(unscheduled[0])),)


def release_empty_instances(instances: Iterable[Instance]) -> tuple[Instance, ...]:
    """The instances that hold at least one job."""
    return tuple(i for i in instances if i.jobs)


class _Scale:
    """The ``least remaining`` score; float division and addition are monotone, so an
    instance with at least a job's demand left scores at least the demand's own score."""

    def __init__(self, catalogue: Catalogue) -> None:
        capacities = [capacity(t) for t in catalogue.types]
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
        room = capacity(type)
        taken = used(jobs) if jobs else (0, 0, 0)
        self.cpus = room[0] - taken[0]
        self.memory = room[1] - taken[1]
        self.gpus = room[2] - taken[2]


class State:
    """Allocated instances, kept per type in lists sorted by (remaining score, id)."""

    def __init__(self, catalogue: Catalogue, instances: Sequence[Instance]) -> None:
        self.scale = _Scale(catalogue)
        self.open = [_Open(i.id, i.type, i.jobs) for i in instances]
        self.by_id = {o.id: o for o in self.open}
        self.sorted: dict[str, list[tuple[float, int]]] = {}
        for o in self.open:
            self._insert(o)
        self.next_id = max((i.id for i in instances), default=0) + 1
        self.capacity = {t.name: capacity(t) for t in catalogue.types}
        self.capacity.update((o.type.name, capacity(o.type)) for o in self.open)

    def _insert(self, o: _Open) -> None:
        # A full instance (no vCPU or no memory left) can take no job: leave it out.
        if o.cpus > 0 and o.memory > 0:
            insort(self.sorted.setdefault(o.type.name, []), self._key(o))

    def _key(self, o: _Open) -> tuple[float, int]:
        return self.scale.score(o.cpus, o.memory, o.gpus), o.id

    def fit(self, job: Job) -> bool:
        """Place ``job`` on the least-remaining instance with room for it, if any."""
        cpus, memory, gpus = demand(job)
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

    def instances(self) -> tuple[Instance, ...]:
        return tuple(Instance(o.id, o.type, tuple(o.jobs)) for o in self.open)
