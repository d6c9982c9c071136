"""Dispatch backends: the local machine, Slurm, PBS Pro and Torque (ECS lives in an extra),
and squashed allocations on a batch scheduler.

The names below are imported on first use (PEP 562): ``seqera_core.config`` reads only
the registry, and importing every backend with it (the wire format's converters among
them) would cost commands such as ``seqera plan`` a tenth of a second of start-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._batch import BatchBackend, RetryPolicy, SchedulerError, SubmitError
    from ._squash import SquashBackend
    from ._squash_plan import Decision, history_runtime
    from .base import Backend, JobHandle, JobSpec, JobState, JobStatus, NoLookup
    from .local import LocalBackend
    from .pbs import PbsBackend
    from .registry import BACKENDS, BATCH, BackendEntry, entry, open_backend
    from .slurm import SlurmBackend

# each public name and the module that defines it
_HOMES = {
    "BatchBackend": "_batch",
    "RetryPolicy": "_batch",
    "SchedulerError": "_batch",
    "SubmitError": "_batch",
    "SquashBackend": "_squash",
    "Decision": "_squash_plan",
    "history_runtime": "_squash_plan",
    "Backend": "base",
    "JobHandle": "base",
    "JobSpec": "base",
    "JobState": "base",
    "JobStatus": "base",
    "NoLookup": "base",
    "LocalBackend": "local",
    "PbsBackend": "pbs",
    "BACKENDS": "registry",
    "BATCH": "registry",
    "BackendEntry": "registry",
    "entry": "registry",
    "open_backend": "registry",
    "SlurmBackend": "slurm",
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


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value  # looked up once
    return value
