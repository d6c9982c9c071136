"""The loop after the first ``fit_jobs`` pass: a new instance for the first waiting job,
filled first fit in queue order, until nobody waits; and the lookahead's choice of type
(see :mod:`seqera_core.planning._planner`)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from ._lpbound import dual_prices
from ._mintree import Group, MinTree, Packer
from ._model import Job, Room, capacity, millicores
from ._types import Types
from .catalogue import Catalogue, InstanceType

__all__ = ["fill_new_instances"]

_CPU_GROUPS = 32


def fill_new_instances(
    types: Types,
    waiting: Sequence[Job],
    required: Sequence[InstanceType],
    lookahead: bool = False,
) -> list[tuple[InstanceType, list[Job]]]:
    """The new instances, in order, for the ``waiting`` jobs (in queue order, each with
    the type it ``required``): allocate for the first waiting job, fill that instance with
    the waiting jobs that fit, in queue order; repeat until nobody waits.

    Waiting jobs are grouped by hint and by vCPU band (one band per value when there are
    few, the usual 1, 2, 4 cores; else quantiles). Within a group the tree's minima then
    prune almost exactly on memory; one tree over jobs of mixed sizes could search most
    of itself to learn that no job has both few cores and little memory.

    With ``lookahead`` the type is not the first job's required one: the cheapest type
    of each shape that holds the first job is packed on trial (a type whose whole
    capacity is worth less per dollar than the best fill so far is skipped: it cannot
    win), and the fill worth the most per dollar is allocated.
    """
    demands = _demands(waiting)
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
        return []
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
    rooms = {id(t): capacity(t) for t in types.catalogue.types}
    placed = [False] * len(waiting)
    packer = Packer(groups, demands, placed)
    made: list[tuple[InstanceType, list[Job]]] = []
    head, end = 0, len(waiting)
    while True:
        while head < end and placed[head]:
            head += 1
        if head == end:
            return made
        chosen = required[head]
        taken = packer.pack(head, chosen.name, rooms[id(chosen)], home[head])
        if lookahead:
            best = (sum([worth[p] for p, _, _ in taken]) / max(chosen.price, 1e-12), -chosen.price)
            for t, room in types.candidates(demands[head], waiting[head].instance_type):
                if t is chosen or ceiling[t.name] < best[0]:
                    continue
                trial = packer.pack(head, t.name, room, home[head])
                score = (sum([worth[p] for p, _, _ in trial]) / max(t.price, 1e-12), -t.price)
                if score > best:
                    best, chosen, taken = score, t, trial
        jobs = []
        for position, local, tree in taken:
            tree.remove(local)
            placed[position] = True
            jobs.append(waiting[position])
        made.append((chosen, jobs))


def _demands(jobs: Sequence[Job]) -> list[Room]:
    # each vCPU value rounded once, however many jobs share it
    rounded: dict[float, int] = {}
    found = []
    for job in jobs:
        cpus = rounded.get(job.cpus)
        if cpus is None:
            cpus = rounded[job.cpus] = millicores(job.cpus)
        found.append((cpus, job.memory, job.gpus))
    return found


def _worth(catalogue: Catalogue, demands: Sequence[Room]) -> tuple[list[float], Vector]:
    # Each job's worth at the LP dual prices of the whole queue (see _lpbound): no type's
    # capacity is worth more than its price, and the types of the LP's optimal mix are
    # worth exactly their price, so worth per dollar of a fill measures how close that
    # instance comes to the mix no plan can beat.
    total = (
        float(sum(d[0] for d in demands)),
        float(sum(d[1] for d in demands)),
        float(sum(d[2] for d in demands)),
    )
    capacities = [capacity(t) for t in catalogue.types]
    _, y = dual_prices(capacities, [t.price for t in catalogue.types], total)
    return [d[0] * y[0] + d[1] * y[1] + d[2] * y[2] for d in demands], y


Vector = tuple[float, float, float]
