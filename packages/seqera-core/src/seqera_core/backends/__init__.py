"""Dispatch backends: the local machine, Slurm, PBS Pro and Torque (ECS lives in an extra),
and squashed allocations on a batch scheduler."""

from ._batch import BatchBackend, RetryPolicy, SchedulerError, SubmitError
from ._open import BACKENDS, open_backend, squash_policy
from ._squash import SquashBackend
from ._squash_plan import Decision, history_runtime
from .base import Backend, JobHandle, JobSpec, JobState, JobStatus
from .local import LocalBackend
from .pbs import PbsBackend
from .slurm import SlurmBackend

__all__ = [
    "BACKENDS",
    "Backend",
    "BatchBackend",
    "Decision",
    "JobHandle",
    "JobSpec",
    "JobState",
    "JobStatus",
    "LocalBackend",
    "PbsBackend",
    "RetryPolicy",
    "SchedulerError",
    "SlurmBackend",
    "SquashBackend",
    "SubmitError",
    "history_runtime",
    "open_backend",
    "squash_policy",
]
