"""Dispatch backends, in families: the local machine (``local/``), batch schedulers on one
base (``batch/``: Slurm, PBS Pro, Torque), squashed allocations on a batch scheduler
(``squash/``) and AWS ECS (``ecs/``, an extra). ``base`` is the contract every backend
fills and ``registry`` finds them by name through the entry-point group
``seqera.backends`` (``entries`` holds this package's own).

The names below are imported on first use (PEP 562): ``seqera_core.config`` reads only
the registry, and importing every backend with it (the wire format's converters among
them) would cost commands such as ``seqera plan`` a tenth of a second of start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import exports

if TYPE_CHECKING:
    from .base import Backend, JobHandle, JobSpec, JobState, JobStatus, NoLookup
    from .batch import (
        BatchBackend,
        PbsBackend,
        RetryPolicy,
        SchedulerError,
        SlurmBackend,
        SubmitError,
    )
    from .local import LocalBackend
    from .registry import BACKENDS, BATCH, BackendEntry, entry, open_backend
    from .squash import Decision, SquashBackend, history_runtime

# each public name and the package or module that defines it
_HOMES = {
    "Backend": "base",
    "JobHandle": "base",
    "JobSpec": "base",
    "JobState": "base",
    "JobStatus": "base",
    "NoLookup": "base",
    "BatchBackend": "batch",
    "PbsBackend": "batch",
    "RetryPolicy": "batch",
    "SchedulerError": "batch",
    "SlurmBackend": "batch",
    "SubmitError": "batch",
    "LocalBackend": "local",
    "BACKENDS": "registry",
    "BATCH": "registry",
    "BackendEntry": "registry",
    "entry": "registry",
    "open_backend": "registry",
    "Decision": "squash",
    "SquashBackend": "squash",
    "history_runtime": "squash",
}

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

__getattr__ = exports(__name__, _HOMES)
