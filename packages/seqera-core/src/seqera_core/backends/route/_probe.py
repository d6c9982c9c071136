"""Each candidate backend's limits and load, asked of the backend itself.

The local machine: its cores and memory (what the local backend shares between jobs,
``local.cpus``/``local.memory``), no GPU, and as load the jobs routed there that have not
ended. Slurm: one ``sinfo`` for its partitions' largest nodes and idle cores and one
``squeue`` for its running and pending jobs (``_slurm``), at most every ``every``
seconds; a squashing Slurm's own allocations are room for the jobs the route sent it,
which are served in turn on them as on the local machine's cores. Any other backend (a
cloud one): the platform's queue limits when the platform describes it, else none, and
room for every job (a cloud scales out), so its ``overhead`` alone (a container's start)
sets when a job would start.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import attrs
from attrs import define, field

from ...platforms import Platform
from ..base import Backend
from ..batch.slurm import SlurmBackend
from ..local import LocalBackend
from ..squash import SquashBackend
from ._policy import Limits, Load
from ._slurm import SINFO, SQUEUE, parse_limits, parse_load

__all__ = ["Probe"]

#: Jobs the route sent and has not seen end: (cores, expected seconds, sent at, native id).
Outstanding = list[tuple[float, float, float, str]]


@define
class Probe:
    """Limits and load of one backend, ``name`` in the registry; ``shared_fs`` its entry's.

    ``overhead``: seconds between submission and the engine seeing the job end that are
    not the job's own; ``every``: seconds a scheduler's answer is reused.
    """

    name: str
    backend: Backend
    shared_fs: bool
    overhead: float
    platform: Platform | None = None
    every: float = 3.0
    clock: Callable[[], float] = time.time
    _seen: dict[str | None, tuple[float, str, str]] = field(factory=dict)
    _failure: str = ""

    @property
    def _slurm(self) -> SlurmBackend | None:
        inner = getattr(self.backend, "inner", self.backend)  # a squashed Slurm's own
        return inner if isinstance(inner, SlurmBackend) else None

    @property
    def _local(self) -> LocalBackend | None:
        return self.backend if isinstance(self.backend, LocalBackend) else None

    @property
    def local(self) -> bool:
        """Whether the backend runs jobs on this machine."""
        return self._local is not None

    def limits(self, queue: str | None) -> Limits:
        """What the backend can run at all (``queue``: the partition a job names)."""
        if (local := self._local) is not None:
            cpus, memory = local.capacity_cpus, local.capacity_memory
            return Limits(cpus, memory, None, 0, True)
        if self._slurm is not None:
            sinfo, _ = self._answers(queue)
            if not sinfo:
                return Limits(down=f"sinfo did not answer: {self._failure}")
            found = parse_limits(sinfo, queue)
            if found is None:
                where = f"partition {queue!r}" if queue else "default partition"
                return Limits(down=f"no {where} in sinfo's list")
            return found
        return self._platform_limits(queue)

    def load(self, queue: str | None, outstanding: Outstanding) -> Load:
        """How busy the backend is for a job of ``queue``, counting the jobs the route
        sent there that have not ended (``outstanding``, in the order they were sent)."""
        now = self.clock()
        left = [(c, max(1.0, e - (now - at)), at, n) for c, e, at, n in outstanding]
        if (local := self._local) is not None:
            return _serve(Load(local.capacity_cpus, overhead=self.overhead), left)
        if self._slurm is not None:
            sinfo, squeue = self._answers(queue)
            if isinstance(self.backend, SquashBackend):
                # its allocations run the jobs the route sent: their cores are room for
                # those, served in turn, not others' load held to the time limit (and so
                # are a job's own, for one it sent to the scheduler alone)
                pool = {*self.backend.allocations(), *(n for *_, n in left)}
                return _serve(parse_load(sinfo, squeue, queue, now, overhead=self.overhead,
                                         pool=pool), left)  # fmt: skip
            answered = self._seen[queue][0]
            own = {n: s for _, s, _, n in left}
            load = parse_load(sinfo, squeue, queue, now, own, self.overhead)
            # jobs sent since squeue answered are not in it: they queue before a new one
            later = [(c, s) for c, s, at, _ in left if at >= answered]
            return attrs.evolve(load, queued=(*load.queued, *later))
        return Load(float("inf"), overhead=self.overhead)

    def _answers(self, queue: str | None) -> tuple[str, str]:
        slurm = self._slurm
        assert slurm is not None
        seen = self._seen.get(queue)
        if seen is not None and self.clock() - seen[0] < self.every:
            return seen[1], seen[2]
        sinfo = slurm.query(SINFO)
        squeue = slurm.query(SQUEUE)
        # the command's last words say why (sinfo's "fatal: ..." line), not its whole log
        said = (sinfo.stderr.strip() or sinfo.stdout.strip()).splitlines()
        self._failure = "" if sinfo.ok else (said[-1][:200] if said else sinfo.describe())
        answer = (
            self.clock(),
            sinfo.stdout if sinfo.ok else "",
            squeue.stdout if squeue.ok else "",
        )
        self._seen[queue] = answer
        return answer[1], answer[2]

    def _platform_limits(self, queue: str | None) -> Limits:
        platform = self.platform
        if platform is None or platform.scheduler != self.name:
            return Limits(gpus=None, shared_fs=self.shared_fs)
        names = tuple(q.name for q in platform.queues)
        chosen = platform.queue(queue) if queue else None
        pool = [chosen] if chosen is not None else list(platform.queues)

        def most(values: list[float | int | None]) -> float | int | None:
            known = [v for v in values if v is not None]
            return None if len(known) < len(values) or not known else max(known)

        return Limits(
            cpus=most([q.max_cpus for q in pool]),
            memory=_int(most([q.max_memory for q in pool])),
            walltime=_int(most([q.max_walltime for q in pool])),
            gpus=_int(most([q.max_gpus for q in pool])),
            shared_fs=self.shared_fs,
            queues=names,
        )


def _serve(load: Load, left: Outstanding) -> Load:
    """``load`` with the jobs the route sent there served first come, first served on its
    free cores: what fits runs (its cores back when it is expected to end), the rest
    queues ahead of the scheduler's own queue."""
    free = load.free
    running: list[tuple[float, float]] = []
    queued: list[tuple[float, float]] = []
    for cores, seconds, _, _ in left:
        if not queued and cores <= free:
            free -= cores
            running.append((seconds, cores))
        else:
            queued.append((cores, seconds))
    return attrs.evolve(load, free=free, releases=(*load.releases, *running),
                        queued=(*queued, *load.queued))  # fmt: skip


def _int(value: float | int | None) -> int | None:
    return None if value is None else int(value)
