"""Dispatch backends: the local machine, Slurm, PBS Pro and Torque (ECS lives in an extra)."""

from ._batch import BatchBackend, RetryPolicy, SchedulerError, SubmitError
from ._open import BACKENDS, open_backend
from .base import Backend, JobHandle, JobSpec, JobState, JobStatus
from .local import LocalBackend
from .pbs import PbsBackend
from .slurm import SlurmBackend

__all__ = [
    "BACKENDS",
    "Backend",
    "BatchBackend",
    "JobHandle",
    "JobSpec",
    "JobState",
    "JobStatus",
    "LocalBackend",
    "PbsBackend",
    "RetryPolicy",
    "SchedulerError",
    "SlurmBackend",
    "SubmitError",
    "open_backend",
]
