"""The backend contract every dispatcher fills: submit, poll (one native call), cancel, logs."""

from __future__ import annotations

import abc
import enum
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

from attrs import field, frozen

from ..models import ResourceRequest, string_map

__all__ = ["Backend", "JobHandle", "JobSpec", "JobState", "JobStatus"]


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


@frozen
class JobSpec:
    """One job to submit: an argv (never a shell string), its resources and where it runs."""

    name: str
    command: tuple[str, ...] = field(converter=_argv)
    request: ResourceRequest = field(factory=ResourceRequest)
    workdir: str | None = None
    env: Mapping[str, str] = field(factory=dict, converter=string_map, hash=False)
    labels: Mapping[str, str] = field(factory=dict, converter=string_map, hash=False)
    stdout: str | None = None
    stderr: str | None = None


@frozen
class JobHandle:
    """A submitted job: the backend that owns it and the scheduler's own id."""

    backend: str
    native_id: str
    name: str = ""
    stdout: str | None = None
    stderr: str | None = None


@frozen
class JobStatus:
    """Where a job is, and for a finished one how it ended."""

    handle: JobHandle
    state: JobState
    exit_code: int | None = None
    reason: str | None = None
    out_of_memory: bool = False
    time_limit: bool = False
    wall_seconds: float | None = None
    peak_memory_bytes: int | None = None
    # Why a job that did not succeed ended, when the scheduler says more than the flags:
    # one of seqera_core.history.CAUSES ("node_failure", "preempted", ...).
    cause: str | None = None


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

    def close(self) -> None:  # noqa: B027 - most backends hold nothing to release
        """Release what the backend holds (processes, launchers, connections).

        Jobs a batch scheduler or ECS runs go on running; the local backend ends its own.
        """
