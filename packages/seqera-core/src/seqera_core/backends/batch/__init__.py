"""Batch schedulers on one base: Slurm, PBS Pro, Torque and Grid Engine (and any to come).

``BatchBackend`` (``_base``) owns the life cycle every scheduler shares: job scripts and
their directory (``_jobdir``), arrays (``_arrays``), commands with retries
(``_commands``), exit codes (``_exits``), exactly-once recovery (``_recovery``). Each
scheduler module (``slurm``, ``pbs``, ``sge``) only supplies argv builders, output parsers and a
state map citing its documentation (``_verbs`` is the contract).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import exports

if TYPE_CHECKING:
    from ._base import BatchBackend
    from ._commands import CommandResult, RetryPolicy, run_command
    from ._errors import SchedulerError, SubmitError
    from ._jobdir import JobFiles, job_environment, job_labels, prepare_job
    from ._verbs import BatchVerbs
    from .pbs import PbsBackend
    from .sge import SgeBackend
    from .slurm import SlurmBackend

# each public name and the module that defines it
_HOMES = {
    "BatchBackend": "_base",
    "CommandResult": "_commands",
    "RetryPolicy": "_commands",
    "run_command": "_commands",
    "SchedulerError": "_errors",
    "SubmitError": "_errors",
    "JobFiles": "_jobdir",
    "job_environment": "_jobdir",
    "job_labels": "_jobdir",
    "prepare_job": "_jobdir",
    "BatchVerbs": "_verbs",
    "PbsBackend": "pbs",
    "SgeBackend": "sge",
    "SlurmBackend": "slurm",
}

__all__ = [
    "BatchBackend",
    "BatchVerbs",
    "CommandResult",
    "JobFiles",
    "PbsBackend",
    "RetryPolicy",
    "SchedulerError",
    "SgeBackend",
    "SlurmBackend",
    "SubmitError",
    "job_environment",
    "job_labels",
    "prepare_job",
    "run_command",
]

__getattr__ = exports(__name__, _HOMES)
