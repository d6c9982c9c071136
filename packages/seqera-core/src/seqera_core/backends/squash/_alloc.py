"""The allocations of a :class:`~seqera_core.backends.SquashBackend`: room for its jobs.

:class:`Allocator` plans each job into a live allocation of its group with room left
(cores, memory, slots, the cpu-seconds it is expected to take, and time before the
allocation ends); the jobs nothing has room for are packed into new allocations
(``_squash_plan.pack``), sized by ``_squash_plan.allocation_size`` against the largest
node of the group's queue (asked of the wrapped backend once per queue, where it can
tell: ``SlurmBackend.largest_node``), and submitted in one call to the wrapped backend,
so those of one shape become one array. An allocation still queued whose jobs have all
ended, or been cancelled, or been run by another one, is cancelled: it is not needed.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ...errors import SeqeraError
from ...models import ResourceRequest
from ...squash import Node, SquashPolicy
from ..base import Backend, JobSpec
from ..batch import SubmitError
from . import _protocol as proto
from ._plan import Shape, allocation_size, pack
from ._state import Allocation, Group, Job, private_dir

__all__ = ["Allocator"]


class Allocator:
    """Plans, sizes, submits and cancels the allocations of one squash backend.

    Args:
        inner: the backend that submits and cancels the allocations.
        policy: the squash policy (``cpus``, ``max_jobs``, ``max_time``).
        root: the backend's root directory (the launcher's copy goes there).
        idle: seconds a launcher waits for new jobs before it ends.
        python: the interpreter the compute nodes run the launcher with.
        preload: what each launcher imports once (see ``_launcher``).
        clock: the time, for what is left of a running allocation.
    """

    def __init__(
        self,
        inner: Backend,
        policy: SquashPolicy,
        root: Path,
        *,
        idle: float = 30.0,
        python: str = sys.executable,
        preload: Sequence[str] = (),
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.inner = inner
        self.policy = policy
        self.root = root
        self.idle = idle
        self.python = python
        self.preload = tuple(preload)
        self._clock = clock
        self._nodes: dict[str | None, Node | None] = {}
        self._launcher: Path | None = None

    def node(self, queue: str | None) -> Node | None:
        """The largest node of ``queue`` as the wrapped backend reports it (asked once)."""
        if queue not in self._nodes:
            ask = getattr(self.inner, "largest_node", None)
            try:
                self._nodes[queue] = ask(queue) if callable(ask) else None
            except SeqeraError:  # sizing informs; it never fails a submission
                self._nodes[queue] = None
        return self._nodes[queue]

    def cover(self, jobs: Iterable[Job], known: Sequence[Job], groups: Sequence[Group]) -> None:
        """Plan room for ``jobs`` in live allocations, and submit new ones for the rest;
        ``known`` are all the backend's jobs (what the allocations are planned for)."""
        now = self._clock()
        excess: dict[int, list[Job]] = {}
        room = {id(a): self._room(a, now, known) for g in groups for a in g.live()}
        for job in jobs:
            placed = None
            for allocation in sorted(job.group.live(), key=lambda a: room[id(a)][0]):
                work, slots, remaining = room[id(allocation)]
                if (
                    slots >= 1
                    and work >= job.work
                    and job.cpus <= allocation.cpus
                    and job.memory <= allocation.memory
                    and job.time + proto.MARGIN <= remaining
                ):
                    room[id(allocation)] = (work - job.work, slots - 1, remaining)
                    placed = allocation
                    break
            if placed is None:
                excess.setdefault(id(job.group), []).append(job)
            job.planned = placed
        new: list[Allocation] = []
        for members in excess.values():
            group = members[0].group
            # squash.cpus set: the node does not matter, and sinfo is not asked
            node = self.node(group.template.queue) if self.policy.cpus is None else None
            for placed_jobs in pack(self.policy, [_shape(j) for j in members], node):
                new.append(self._new(group, [members[i] for i in placed_jobs], node))
        if new:
            self._submit(new)

    def cancel_idle(self, known: Sequence[Job], groups: Sequence[Group]) -> None:
        """Cancel the live allocations not started yet whose jobs have all ended or been
        cancelled (or that another allocation ran)."""
        busy = {
            id(job.planned)
            for job in known
            if job.planned is not None and job.final is None and not job.cancelled
        }
        idle = [a for g in groups for a in g.live() if id(a) not in busy and not a.started]
        handles = [a.handle for a in idle if a.handle is not None]
        if handles:
            self.inner.cancel(handles)
        for allocation in idle:
            allocation.end("not needed")

    def _submit(self, new: Sequence[Allocation]) -> None:
        specs = [self._spec(a) for a in new]
        try:
            handles = self.inner.submit(specs)
        except SubmitError as exc:  # those that went out run; the others are not needed
            kept = dict(zip(exc.positions, exc.submitted, strict=True))
            for n, allocation in enumerate(new):
                if n in kept:
                    allocation.submitted(kept[n])
                else:  # its jobs are covered again at the next poll
                    allocation.end(f"not submitted: {exc}")
            return
        except SeqeraError as exc:
            for allocation in new:
                allocation.end(f"not submitted: {exc}")
            return
        for allocation, handle in zip(new, handles, strict=True):
            allocation.submitted(handle)

    def _room(
        self, allocation: Allocation, now: float, known: Sequence[Job]
    ) -> tuple[float, int, float]:
        """Unplanned cpu-seconds, job slots and seconds left in a live allocation."""
        remaining = allocation.remaining(now) - proto.MARGIN
        planned = [
            j for j in known if j.planned is allocation and j.final is None and not j.cancelled
        ]
        work = allocation.cpus * max(remaining, 0.0) - sum(j.work for j in planned)
        return work, self.policy.max_jobs - len(planned), remaining

    def _new(self, group: Group, members: Sequence[Job], node: Node | None) -> Allocation:
        cpus, memory, limit = allocation_size(self.policy, [_shape(j) for j in members], node)
        name = f"alloc{len(group.allocations) + 1}"
        allocation = Allocation(name, group, group.directory / name, cpus, memory, limit)
        spec = {"name": name, "cpus": cpus, "memory": memory, "time": limit, "idle": self.idle}
        spec |= {"preload": list(self.preload), "backend": self.inner.name}
        allocation.create(spec)
        group.allocations.append(allocation)
        for job in members:
            job.planned = allocation
        return allocation

    def _spec(self, allocation: Allocation) -> JobSpec:
        template = allocation.group.template
        request = ResourceRequest(
            cpus=allocation.cpus,
            memory=allocation.memory,
            time=allocation.time,
            disk=template.disk,
            queue=template.queue,
            account=template.account,
            container=template.container,
            extra=template.extra,
        )
        group, directory = allocation.group.directory, allocation.directory
        return JobSpec(
            name=f"squash-{allocation.group.name}-{allocation.name}",
            command=(self.python, str(self._launcher_path()), str(group), str(directory)),
            request=request,
            workdir=str(allocation.directory),
            labels=allocation.group.labels,
        )

    def _launcher_path(self) -> Path:
        if self._launcher is None:
            # a copy on the shared filesystem: the compute node needs nothing installed;
            # beside it, under their own names for its imports, the job's side
            # (_launcher_job) and the on-disk protocol (_protocol)
            here = Path(proto.__file__).parent
            self._launcher = private_dir(self.root) / "launcher.py"
            for side in ("_launcher_job.py", "_protocol.py"):
                shutil.copyfile(here / side, self.root / side)
            # and the jobs' memory cgroups (standard library only too)
            shutil.copyfile(here.parent / "local" / "_cgroup.py", self.root / "_cgroup.py")
            shutil.copyfile(here / "_launcher.py", self._launcher)
        return self._launcher


def _shape(job: Job) -> Shape:
    return Shape(job.cpus, job.memory, job.time, job.expected)
