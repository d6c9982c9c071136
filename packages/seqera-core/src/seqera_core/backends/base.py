"""The backend contract every dispatcher fills: submit, poll (one native call), cancel, logs.

A finished job says why it ended in :attr:`JobStatus.cause`, one of :data:`CAUSES`, the
same strings on every backend (the history keeps them in its ``cause`` column), so an
engine's retry acts on the cause, not on a scheduler's spelling of it.
"""

from __future__ import annotations

import abc
import enum
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence

from attrs import Factory, field, frozen

from ..causes import (
    CANCELLED,
    CAUSES,
    NODE_FAILURE,
    OTHER,
    OUT_OF_MEMORY,
    PREEMPTED,
    TIME_LIMIT,
)
from ..errors import SeqeraError
from ..models import ResourceRequest, string_map

__all__ = [
    "CANCELLED",
    "CAUSES",
    "NODE_FAILURE",
    "OTHER",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "TIME_LIMIT",
    "Backend",
    "JobHandle",
    "JobSpec",
    "JobState",
    "JobStatus",
    "NoLookup",
    "job_cause",
]


def _argv(value: Iterable[str]) -> tuple[str, ...]:
    if isinstance(value, str):
        # a lone string would become one argv element per character
        raise TypeError("command must be a sequence of arguments, not a string")
    return tuple(str(part) for part in value)


class JobState(enum.Enum):
    """The common job states every scheduler's states map onto."""

    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELLED = "cancelled"
    UNKNOWN = "unknown"

    @property
    def finished(self) -> bool:
        """Whether the job will not change state again."""
        return self in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


def job_cause(state: JobState, out_of_memory: bool = False, time_limit: bool = False) -> str | None:
    """The cause a backend that knows no more than its flags reports; None unless failed."""
    if state is JobState.CANCELLED:
        return CANCELLED
    if state is not JobState.FAILED:
        return None
    if out_of_memory:
        return OUT_OF_MEMORY
    return TIME_LIMIT if time_limit else OTHER


def _cause(status: JobStatus) -> str | None:
    return job_cause(status.state, status.out_of_memory, status.time_limit)


class NoLookup(SeqeraError):
    """This backend cannot look jobs up by submission key (see :meth:`Backend.find`)."""


@frozen
class JobSpec:
    """One job to submit: an argv (never a shell string), its resources and where it runs.

    ``key`` is the caller's submission key, unique to this job (the sidecar writes it
    to its row before submitting): the backend keeps it with the job, so that after a
    crash :meth:`Backend.find` tells whether the job reached the scheduler. None: the
    job cannot be looked up later (the backend still keys its own submissions).
    """

    name: str
    command: tuple[str, ...] = field(converter=_argv)
    request: ResourceRequest = field(factory=ResourceRequest)
    workdir: str | None = None
    env: Mapping[str, str] = field(factory=dict, converter=string_map, hash=False)
    labels: Mapping[str, str] = field(factory=dict, converter=string_map, hash=False)
    stdout: str | None = None
    stderr: str | None = None
    key: str | None = None
    #: The same job for a backend without the submit host's files (ECS), its inputs and
    #: outputs staged by the engine (S3): built only once the routing backend sends it
    #: there. None: its files cannot leave the shared file system. Only the routing
    #: backend reads it; what it hands a backend has none.
    staged: Callable[[], JobSpec] | None = field(default=None, eq=False, repr=False)


@frozen
class JobHandle:
    """A submitted job: the backend that owns it (the one it runs on, under routing
    too) and the scheduler's own id."""

    backend: str
    native_id: str
    name: str = ""
    stdout: str | None = None
    stderr: str | None = None
    #: Why the routing backend sent the job to ``backend`` (None: no routing chose it).
    route: str | None = None


@frozen
class JobStatus:
    """Where a job is, and for a finished one how it ended.

    ``cause`` is one of :data:`CAUSES` for a job that failed or was cancelled (None
    otherwise); by default it follows the flags. ``node`` is where it last ran, when the
    scheduler says. ``resubmissions`` counts how often the backend itself sent the job
    again after a node failure or a preemption: the handle stays the one ``submit``
    returned, and this status is the latest run's.
    """

    handle: JobHandle
    state: JobState
    exit_code: int | None = None
    reason: str | None = None
    out_of_memory: bool = False
    time_limit: bool = False
    wall_seconds: float | None = None
    peak_memory_bytes: int | None = None
    # Why a job that did not succeed ended: one of CAUSES, the strings of
    # seqera_core.history.CAUSES; by default what the flags say (see the docstring).
    cause: str | None = field(default=Factory(_cause, takes_self=True))
    node: str | None = None
    resubmissions: int = 0
    # CPU time (user + system, seconds) the job's processes used, where the backend can
    # measure it: wait4's rusage (local, the squash launcher), sacct's TotalCPU (Slurm with
    # accounting), the container's cgroup (ECS). Busy cores = cpu_seconds / wall_seconds.
    cpu_seconds: float | None = None
    # When the job started (epoch seconds), where the backend knows it (local, the squash
    # launcher): with wall_seconds, when it ended, for the report's timeline.
    started_at: float | None = None


class Backend(abc.ABC):
    """A dispatcher. Sync code; async engines wrap it. Polling many jobs is one native call.

    ``calls`` counts each native command or API call made (``sbatch``, ``squeue``, ...),
    so benchmarks and tests can check the cost per job.
    """

    name: str
    #: Seconds a cancelled job has between the polite and the hard kill, where the
    #: backend itself sends them (the local backend); schedulers keep their own.
    kill_grace: float = 0.0

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    @abc.abstractmethod
    def submit(self, jobs: Sequence[JobSpec]) -> list[JobHandle]:
        """Submit every job; returns their handles in the same order."""

    @abc.abstractmethod
    def poll(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        """The status of every handle, in the same order, with one native call."""

    @abc.abstractmethod
    def cancel(self, handles: Sequence[JobHandle]) -> None:
        """Cancel every job, with one native call where the scheduler allows it."""

    @abc.abstractmethod
    def logs(self, handle: JobHandle) -> str:
        """The job's output so far (stdout, then stderr if kept apart)."""

    def find(self, keys: Sequence[str]) -> dict[str, JobHandle]:
        """The handles of the jobs carrying these submission keys (:attr:`JobSpec.key`),
        by key, asked of the scheduler itself (one listing call where it has one).

        What a caller that lost its handles (a crash between submit and storing them)
        uses to learn whether a job went out: a key left out of the answer was never
        accepted (or its job is gone from every record the scheduler keeps), so it may
        be sent again. A found job is polled with its handle like any other.

        Raises:
            NoLookup: the backend cannot look jobs up (this default): nothing can be
                concluded about a key, and the job must not be sent again blindly.
            SeqeraError: the scheduler did not answer (a ``SchedulerError`` or
                ``EcsError``): ask again later, and send nothing meanwhile.
        """
        raise NoLookup(f"the {self.name} backend cannot look jobs up by submission key")

    def close(self) -> None:  # noqa: B027 - most backends hold nothing to release
        """Release what the backend holds (processes, launchers, connections).

        Jobs a batch scheduler or ECS runs go on running; the local backend ends its own.
        """
