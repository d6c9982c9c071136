"""A Snakemake job's resources, threads, rule and wildcards as the common request.

Snakemake's own resource names (``mem_mb``, ``mem``, ``disk_mb``, ``runtime``, ``threads``,
``gpu``, ...) and the names users write for snakemake-executor-plugin-slurm
(``slurm_partition``, ``slurm_account``, ``slurm_extra``, ``constraint``, ``qos``) are read
by ``seqera_core.dialects.snakemake``; this module adds what only a job knows.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from seqera_core.checks import suspicious
from seqera_core.dialects.snakemake import request_from_resources
from seqera_core.models import ResourceRequest
from seqera_core.sizing_guard import references_memory
from seqera_core.units import MB, MIB, format_bytes

__all__ = ["RUNNER_MEMORY", "default_memory", "input_bytes", "job_request", "task_labels"]

# Every job runs Snakemake itself around its command (about 140 MB resident, measured
# with snakemake 9.27): less than this is killed by any scheduler that enforces memory.
RUNNER_MEMORY = 256 * MIB


def input_bytes(paths: Iterable[str]) -> int | None:
    """Total size of the job's input files that exist here (None when none can be seen)."""
    sizes = []
    for path in paths:
        try:
            sizes.append(os.stat(path).st_size)
        except (OSError, TypeError, ValueError):
            continue  # remote or not yet visible: Snakemake checks inputs itself
    return sum(sizes) if sizes else None


def default_memory(total_input: int | None) -> int:
    """Snakemake's ``--default-resources`` memory: ``min(max(2*input.size_mb, 1000), 8000)`` MB."""
    input_mb = (total_input or 0) / MB
    return int(min(max(2 * input_mb, 1000), 8000) * MB)


def _rule(job: Any) -> str:
    return str(job.groupid) if job.is_group() else str(job.rule.name)


def task_labels(job: Any) -> dict[str, str]:
    """The job's own labels: its rule (or group) and each wildcard."""
    if job.is_group():
        return {"snakemake/group": str(job.groupid)}
    labels = {"snakemake/rule": str(job.rule.name)}
    wildcards: Mapping[str, Any] = getattr(job, "wildcards_dict", None) or {}
    labels.update({f"snakemake/wildcard.{k}": str(v) for k, v in wildcards.items()})
    return labels


def job_request(
    job: Any, *, queue: str | None = None, account: str | None = None
) -> tuple[ResourceRequest, list[str]]:
    """The common request for a job and warnings about it; ``queue``/``account`` apply where
    the rule names none.

    A job that declares no memory gets Snakemake's own default (twice its input, between
    1000 and 8000 MB), so ``--default-resources`` is not needed for a sensible request;
    one that declares less than :data:`RUNNER_MEMORY` gets that much, with a warning.
    """
    resources = {k: v for k, v in dict(job.resources).items() if v is not None}
    translation = request_from_resources(
        resources, threads=job.threads, rule=_rule(job), attempt=job.attempt
    )
    request = translation.request
    warnings = list(suspicious(request))
    total = input_bytes(job.input)
    labels = {**request.labels, **task_labels(job)}
    changes: dict[str, Any] = {"input_bytes": total, "labels": labels}
    # {resources.mem_mb} in the command: the tool sizes itself, never shrink it
    changes["self_sizing"] = references_memory(
        [(j.rule.shellcmd, j.rule.params) for j in (job.jobs if job.is_group() else [job])]
    )
    if request.memory is None:
        changes["memory"] = default_memory(total)
    elif request.memory < RUNNER_MEMORY:
        changes["memory"] = RUNNER_MEMORY
        warnings.append(
            f"memory raised from {format_bytes(request.memory)} to "
            f"{format_bytes(RUNNER_MEMORY)}, the least a Snakemake job runs in"
        )
    if request.queue is None and queue:
        changes["queue"] = queue
    if request.account is None and account:
        changes["account"] = account
    return attrs.evolve(request, **changes), warnings
