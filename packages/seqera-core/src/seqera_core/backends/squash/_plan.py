"""Which jobs share a squashed allocation, and how big each allocation is: the planning
that :class:`~seqera_core.backends.SquashBackend` and ``seqera squash`` (a dry run) share.

The planner (:func:`seqera_core.planning._planner.schedule`, CAVATICA's multi-instance algorithm)
packs jobs into allocations along three dimensions: cpu-seconds (cores x run time),
byte-seconds of memory, and a slot per job, against an allocation of ``cpus`` cores for
``max_time`` holding at most ``max_jobs`` jobs, so the summed work of an allocation fits
its time limit.

The run time a job is packed by is what it is expected to take: the history's longest
successful run of its process where there is one (:func:`history_runtime`), else its
declared time limit. The allocation's own time limit still covers the longest declared
limit of its jobs plus the launcher's margin, since the launcher starts a job only when
its whole time limit fits (``_launcher.py``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Any, Protocol

from attrs import frozen

from ...planning import Job as PlannedJob
from ...planning import schedule
from ...planning.catalogue import Catalogue, InstanceType
from ...squash import SLACK, Node, SquashPolicy, share_key, unsquashable
from ...units import MIB
from ..base import JobSpec
from ..batch import job_labels

__all__ = [
    "Decision",
    "Expected",
    "Node",
    "Nodes",
    "Shape",
    "allocation_size",
    "explain",
    "history_runtime",
    "pack",
    "shape",
]


@frozen
class Shape:
    """What one job asks of an allocation: cores, memory, declared time limit (seconds),
    and the run time it is packed by (its time limit when nothing better is known)."""

    cpus: float
    memory: int
    time: int
    expected: float

    @property
    def work(self) -> float:
        """Cpu-seconds it is expected to take."""
        return self.cpus * self.expected


# A job's expected run time in seconds, or None when nothing is known about it.
Expected = Callable[[JobSpec], float | None]


# The largest node of a queue (None: the scheduler's default queue), or None if unknown.
Nodes = Callable[[str | None], Node | None]


class _History(Protocol):
    def stats(self, process: str) -> Any: ...


@frozen
class Decision:
    """What would happen to one job, and why: ``squash`` (with its allocation), or ``alone``."""

    job: str
    how: str
    why: str
    allocation: int | None = None


def shape(spec: JobSpec, expected: Expected | None = None) -> Shape:
    """The shape of ``spec``; its expected run time from ``expected``, capped by its limit."""
    request = spec.request
    if request.time is None:
        raise ValueError(f"job {spec.name!r} has no time limit to squash it by")
    guess = expected(spec) if expected is not None else None
    run = float(request.time) if guess is None else min(max(float(guess), 1.0), request.time)
    return Shape(request.cpus or 1.0, request.memory or 1, request.time, run)


def history_runtime(history: _History) -> Expected:
    """Expected run times from a task history: the longest successful run of the job's
    process (``History.stats(process).realtime``), looked up once per process."""
    known: dict[str, float | None] = {}

    def expected(spec: JobSpec) -> float | None:
        process = spec.request.process
        if not process:
            return None
        if process not in known:
            try:
                stats = history.stats(process)
            except Exception:  # the history informs; it never fails a submission
                stats = None
            realtime = getattr(stats, "realtime", None)
            known[process] = float(realtime) if isinstance(realtime, int | float) else None
        return known[process]

    return expected


def allocation_size(
    policy: SquashPolicy, shapes: Sequence[Shape], node: Node | None = None
) -> tuple[int, int, int]:
    """Cores, memory and time limit of an allocation for jobs of these shapes, on a queue
    whose largest node is ``node`` (see the module's docstring for the rule)."""
    largest = max(math.ceil(s.cpus) for s in shapes)
    # as much memory per core as the hungriest job, so every job fits at any moment
    per_core = max(s.memory / s.cpus for s in shapes)
    cpus = policy.cpus if policy.cpus is not None else largest
    if policy.cpus is None and node is not None:
        wanted = math.ceil(sum(s.cpus for s in shapes))
        room = node.cpus
        if node.memory is not None:
            room = min(room, math.floor(node.memory / per_core))
        cpus = max(largest, min(wanted, room))
    memory = math.ceil(per_core * cpus / MIB) * MIB
    memory = max(memory, max(s.memory for s in shapes))
    work = sum(s.work for s in shapes)
    limit = max(max(s.time for s in shapes), math.ceil(work / cpus)) + SLACK
    return cpus, memory, min(policy.max_time, math.ceil(limit / 60) * 60)


def pack(
    policy: SquashPolicy, shapes: Sequence[Shape], node: Node | None = None
) -> list[list[int]]:
    """Which jobs go together, by the planner: the job indices of each allocation."""
    if not shapes:
        return []
    cpus, memory, _ = allocation_size(policy, shapes, node)
    span = policy.max_time - SLACK
    # Dimensions: cpu-seconds, byte-seconds and (in the planner's GPU slot) one per job.
    kind = InstanceType("allocation", cpus * span, memory * span, 1.0, policy.max_jobs)
    jobs = [
        PlannedJob(str(n), s.work, max(1, math.ceil(s.memory * s.expected)), 1)
        for n, s in enumerate(shapes)
    ]
    plan = schedule(Catalogue((kind,)), jobs)
    return sorted(sorted(int(j.name) for j in instance.jobs) for instance in plan.instances)


def explain(
    specs: Sequence[JobSpec],
    policy: SquashPolicy,
    expected: Expected | None = None,
    nodes: Nodes | None = None,
) -> list[Decision]:
    """What a :class:`SquashBackend` would do with ``specs`` on an empty cluster whose
    queues' largest nodes ``nodes`` tells (unknown without it)."""
    decisions: dict[int, Decision] = {}
    groups: dict[Hashable, list[tuple[int, JobSpec]]] = {}
    for n, spec in enumerate(specs):
        why = unsquashable(spec.request, policy)
        if why is not None:
            decisions[n] = Decision(spec.name, "alone", why)
            continue
        key = share_key(spec.request, job_labels(spec), policy)
        groups.setdefault(key, []).append((n, spec))
    allocation = 0
    for members in groups.values():
        shapes = [shape(spec, expected) for _, spec in members]
        node = nodes(members[0][1].request.queue) if nodes is not None else None
        for placed in pack(policy, shapes, node):
            allocation += 1
            cpus, memory, limit = allocation_size(policy, [shapes[i] for i in placed], node)
            for i in placed:
                n, spec = members[i]
                why = (
                    f"shares allocation {allocation} ({cpus} cores, {memory // MIB} MiB, "
                    f"{limit} s) with {len(placed) - 1} other job(s) of the same "
                    "queue, account, container, options and squash key"
                )
                decisions[n] = Decision(spec.name, "squash", why, allocation)
    return [decisions[n] for n in range(len(specs))]
