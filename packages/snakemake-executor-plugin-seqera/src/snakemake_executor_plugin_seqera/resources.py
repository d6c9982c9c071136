"""A Snakemake job's resources, threads, rule and wildcards as the common request.

Snakemake's own resource names (``mem_mb``, ``mem``, ``disk_mb``, ``runtime``, ``threads``,
``gpu``, ...) and the names users write for snakemake-executor-plugin-slurm
(``slurm_partition``, ``slurm_account``, ``slurm_extra``, ``constraint``, ``qos``) and for
snakemake-executor-plugin-sge (``sge_queue``, ``sge_project``, ``sge_pe``, ``sge_extra``) and
snakemake-executor-plugin-lsf (``lsf_queue``, ``lsf_project``, ``lsf_extra``, ``time_min``,
``span``/``ptile``/``cpus_per_node``) are read by ``seqera_core.dialects.snakemake``; this
module adds what only a job knows.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from seqera_core.dialects.snakemake import (
    RUNNER_MEMORY,
    default_memory,
    job_memory,
    request_from_resources,
)
from seqera_core.models import ResourceRequest
from seqera_core.platforms import suspicious
from seqera_core.sizing import read_source, references_memory

__all__ = ["RUNNER_MEMORY", "default_memory", "input_bytes", "job_request", "task_labels"]


def input_bytes(paths: Iterable[str]) -> int | None:
    """Total size of the job's input files that exist here (None when none can be seen)."""
    sizes = []
    for path in paths:
        try:
            sizes.append(os.stat(path).st_size)
        except (OSError, TypeError, ValueError):
            continue  # remote or not yet visible: Snakemake checks inputs itself
    return sum(sizes) if sizes else None


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


def _runs(rule: Any) -> list[object]:
    """What a rule runs, as snakemake/rules.py ``Rule`` holds it: its ``shell:`` command
    (``shellcmd``), the source of its ``run:`` block (``run_func_src``, which
    workflow.py ``get_rule_source`` maps back to the Snakefile), the text of its ``script:``
    (a path relative to the rule's ``basedir``, unless it has wildcards or is remote) and
    its ``params``."""
    script, text = getattr(rule, "script", None), None
    if isinstance(script, str) and "{" not in script:
        basedir = getattr(rule, "basedir", None)
        try:
            if basedir is not None and not os.path.isabs(script):
                # snakemake/sourcecache.py SourceFile (as workflow.py reads a rule's files)
                script = str(basedir.join(script).get_path_or_uri(secret_free=True))
            text = read_source(script)
        except (AttributeError, TypeError, ValueError):  # a Snakemake whose API moved
            text = None
    return [getattr(rule, name, None) for name in ("shellcmd", "run_func_src", "params")] + [text]


def job_request(
    job: Any, *, queue: str | None = None, account: str | None = None
) -> tuple[ResourceRequest, list[str]]:
    """The common request for a job and warnings about it; ``queue``/``account`` apply where
    the rule names none.

    Its memory is the one the job runs in (:func:`seqera_core.dialects.snakemake.job_memory`:
    Snakemake's default when the rule declares none, at least :data:`RUNNER_MEMORY`).
    """
    resources = {k: v for k, v in dict(job.resources).items() if v is not None}
    translation = request_from_resources(
        resources, threads=job.threads, rule=_rule(job), attempt=job.attempt
    )
    request = translation.request
    warnings = list(suspicious(request))
    if translation.ignored:
        # never dropped without a word (the executor says it once per rule)
        warnings.append(
            f"resources not sent to the scheduler: {', '.join(translation.ignored)} (seqera "
            "reads none of them; Snakemake's own --resources limits still count them)"
        )
    total = input_bytes(job.input)
    labels = {**request.labels, **task_labels(job)}
    changes: dict[str, Any] = {"input_bytes": total, "labels": labels}
    # {resources.mem_mb} in what it runs: the tool sizes itself, never shrink it
    rules = [getattr(j, "rule", None) for j in (getattr(job, "jobs", None) or [job])]
    changes["self_sizing"] = references_memory([_runs(r) for r in rules])
    if request.container is None and not job.is_group() and job.container_img_url:
        # The rule's `container:` image: a feature the right-sizer learns from.
        changes["container"] = str(job.container_img_url)
    changes["memory"], raised = job_memory(request.memory, total)
    if raised:
        warnings.append(raised)
    if request.queue is None and queue:
        changes["queue"] = queue
    if request.account is None and account:
        changes["account"] = account
    return attrs.evolve(request, **changes), warnings
