"""A catalogue as the planner reads it: which type a job requires, and which types the
lookahead tries for a new instance (see :mod:`seqera_core.planning._planner`)."""

from __future__ import annotations

import math

from ..errors import ResourceError, UsageError
from ..units import format_bytes
from ._model import Job, Room, capacity, covers, demand, missing
from .catalogue import Catalogue, InstanceType

__all__ = ["Types"]

Entry = tuple[InstanceType, Room]


class Types:
    """A catalogue's capacities, cheapest first, and the answers already given."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue
        # sorted() is stable: among equal prices the first listed type wins
        self.by_price = sorted(
            ((t, capacity(t)) for t in catalogue.types), key=lambda entry: entry[0].price
        )
        self.by_name = {t.name: (t, capacity(t)) for t in reversed(catalogue.types)}
        # answers by demand, and by a job's own (vCPUs, memory, GPUs, hint): jobs of a
        # workflow come in a few sizes, so most are answered without rounding their vCPUs
        self.known: dict[Room, InstanceType] = {}
        self.seen: dict[tuple[float, int, int, str | None], InstanceType] = {}
        self.tried: dict[tuple[Room, str | None], list[Entry]] = {}
        # the types of each shape (memory and GPUs per vCPU), cheapest first
        shapes: dict[tuple[float, float], list[Entry]] = {}
        for t, room in self.by_price:
            per = t.vcpus or math.inf  # a type without vCPUs is a shape of its own
            shapes.setdefault((t.memory / per, t.gpus / per), []).append((t, room))
        self.shapes = list(shapes.values())

    def required(self, job: Job) -> InstanceType:
        """The type ``job`` requires: its hint's, else the cheapest that covers it."""
        key = (job.cpus, job.memory, job.gpus, job.instance_type)
        found = self.seen.get(key)
        if found is None:
            found = self.seen[key] = self._required(job)
        return found

    def _required(self, job: Job) -> InstanceType:
        need = demand(job)
        if job.instance_type is not None:
            return self._hinted(job, need)
        found = self.known.get(need)
        if found is not None:
            return found
        cpus, memory, gpus = need
        for t, (c, m, g) in self.by_price:
            if c >= cpus and m >= memory and g >= gpus:
                self.known[need] = t
                return t
        largest = max(self.catalogue.types, key=lambda t: (t.vcpus, t.memory, t.gpus))
        raise UsageError(
            f"job {job.name}: no instance type of {self.catalogue.source} holds {job.cpus} "
            f"vCPUs, {format_bytes(job.memory)} memory and {job.gpus} GPUs "
            f"(the largest, {largest.name}, lacks {missing(largest, job)})"
        )

    def candidates(self, need: Room, hint: str | None) -> list[Entry]:
        """The types the lookahead tries for a new instance whose first job has this
        demand: per shape (memory and GPUs per vCPU, a family of sizes), the cheapest that
        holds it; types with GPUs only for a job that needs one (or when nothing else holds
        it). A hinted job has its one type."""
        found = self.tried.get((need, hint))
        if found is None:
            found = self.tried[(need, hint)] = self._candidates(need, hint)
        return found

    def _candidates(self, need: Room, hint: str | None) -> list[Entry]:
        if hint is not None:
            return [self.by_name[hint]]
        cpus, memory, gpus = need
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

    def _hinted(self, job: Job, need: Room) -> InstanceType:
        entry = self.by_name.get(job.instance_type or "")
        if entry is None:
            names = ", ".join(t.name for t in self.catalogue.types)
            raise ResourceError(
                f"job {job.name}: instance_type", job.instance_type, f"a type of {names}"
            )
        if not covers(entry[1], need):
            raise ResourceError(
                f"job {job.name}: instance_type",
                job.instance_type,
                f"a type that can hold the job; {entry[0].name} lacks {missing(entry[0], job)}",
            )
        return entry[0]
