"""Dispatch backends: the local machine, Slurm, PBS Pro and Torque (ECS lives in an extra)."""

from .base import Backend, JobHandle, JobSpec, JobState, JobStatus
from .local import LocalBackend

__all__ = ["Backend", "JobHandle", "JobSpec", "JobState", "JobStatus", "LocalBackend"]
