"""Dispatch backends: the local machine, Slurm, PBS Pro and Torque (ECS lives in an extra),
and squashed allocations on a batch scheduler."""

from ._batch import BatchBackend, RetryPolicy, SchedulerError, SubmitError
from ._squash import SquashBackend
from ._squash_plan import Decision, history_runtime
from .base import Backend, JobHandle, JobSpec, JobState, JobStatus, NoLookup
from .local import LocalBackend
from .pbs import PbsBackend
from .registry import BACKENDS, BATCH, BackendEntry, entry, open_backend
from .slurm import SlurmBackend

__all__ = [
    "BACKENDS",
    "BATCH",
    "Backend",
    "BackendEntry",
    "BatchBackend",
    "Decision",
    "JobHandle",
    "JobSpec",
    "JobState",
    "JobStatus",
    "LocalBackend",
    "NoLookup",
    "PbsBackend",
    "RetryPolicy",
    "SchedulerError",
    "SlurmBackend",
    "SquashBackend",
    "SubmitError",
    "entry",
    "history_runtime",
    "open_backend",
]
