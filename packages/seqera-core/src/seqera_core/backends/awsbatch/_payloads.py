"""AWS Batch request bodies as pure functions: settings, job definitions, SubmitJob.

A job definition holds what does not change from one job to the next of a shape (image,
resources, roles, log configuration, platform); its name carries a digest of the whole
registration body, so a definition is found by name (one DescribeJobDefinitions) and a
change of role or image never reuses a stale one. Everything per job (command,
environment, labels, queue, timeout, retries) goes in SubmitJob, whose
``containerOverrides.resourceRequirements`` repeat the shape so DescribeJobs shows what
this job asked for.

SubmitJob has no client token: the job's name carries its submission key
(``seqera-<24 hex>-<name>``), which ListJobs' ``JOB_NAME`` filter finds again by prefix.
"""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import field, frozen

from ...dialects.awsbatch import resource_requirements, timeout_seconds
from ...errors import ResourceError
from ...labels import ecs_tags
from ...models import ResourceRequest
from ..awslogs import ContainerSettings, asked, container_overrides

__all__ = [
    "ARGV_PREFIX",
    "DEFAULT_LOGS_GROUP",
    "SUBMISSION_TAG",
    "BatchSettings",
    "Shape",
    "array_command",
    "definition_request",
    "job_name",
    "key_prefix",
    "shape_of",
    "submission_key",
    "submit_request",
]

DEFAULT_LOGS_GROUP = "/aws/batch/job"  # where Batch's awslogs driver writes by default
SUBMISSION_TAG = "seqera-submission"
ARGV_PREFIX = "SEQERA_ARGV_"
# Job and definition names: up to 128 letters, digits, hyphens and underscores, the first
# a letter or digit (SubmitJob.jobName, RegisterJobDefinition.jobDefinitionName).
_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]+", re.ASCII)
_NAME_MAX = 128
# Batch retries an attempt whose host went away (a Spot reclaim reads "Host EC2 (instance
# i-...) terminated."), and no other: the engine's own retry acts on every other cause.
# AWS Batch User Guide, "Automated job retries", evaluateOnExit example.
_SPOT_RETRY = [
    {"onStatusReason": "Host EC2*", "action": "RETRY"},
    {"onReason": "*", "action": "EXIT"},
]


def _positive(_: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10:
        raise ResourceError(f"batch.{attribute.name}", value, "an integer from 1 to 10")


def _required(_: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ResourceError(f"batch.{attribute.name}", value, "a non-empty string")


def _upper(value: object) -> str:
    return str(value).upper()


def _platform(_: Any, attribute: Any, value: Any) -> None:
    if value not in ("EC2", "FARGATE"):
        raise ResourceError(f"batch.{attribute.name}", value, "EC2 or FARGATE")


@frozen
class BatchSettings(ContainerSettings):
    """Where and how AWS Batch jobs run. Only ``queue`` is required.

    ``queue`` is the job queue a job goes to unless its request names one (a platform's
    queue). ``platform`` is the job definitions' capability, ``EC2`` (also Spot compute
    environments) or ``FARGATE`` (then ``execution_role`` is required). ``max_spot_attempts``
    counts every attempt of a job whose host was reclaimed, the first included (Batch's
    ``retryStrategy.attempts``, 1 to 10). The fields AWS Batch shares with ECS (region,
    public IP, defaults, the usage report, its ``sh`` wrapper) are
    :class:`~..awslogs.ContainerSettings`'.
    """

    queue: str = field(validator=_required)
    job_role: str | None = None
    execution_role: str | None = None
    platform: str = field(default="EC2", converter=_upper, validator=_platform)
    logs_group: str = field(default=DEFAULT_LOGS_GROUP, validator=_required)
    max_spot_attempts: int = field(default=3, validator=_positive)

    def __attrs_post_init__(self) -> None:
        if self.platform == "FARGATE" and not self.execution_role:
            raise ResourceError(
                "batch.execution_role", self.execution_role, "an IAM role ARN for Fargate jobs"
            )


@frozen
class Shape:
    """What a job definition is made of: image, vCPUs, memory bytes, GPUs."""

    image: str
    cpus: float
    memory: int
    gpus: int = 0


def shape_of(request: ResourceRequest, settings: BatchSettings) -> Shape:
    """The definition shape of a request; a request without an image is an error."""
    job = asked(request, backend="batch", service="AWS Batch", cpus=settings.default_cpus,
                memory=settings.default_memory)  # fmt: skip
    return Shape(job.image, job.cpus, job.memory, job.gpus)


def _requirements(shape: Shape, settings: BatchSettings) -> list[dict[str, str]]:
    fargate = settings.platform == "FARGATE"
    return resource_requirements(shape.cpus, shape.memory, shape.gpus, fargate)


def definition_request(shape: Shape, settings: BatchSettings) -> dict[str, Any]:
    """The RegisterJobDefinition body for a shape; its name ends with the body's digest."""
    container: dict[str, Any] = {
        "image": shape.image,
        "resourceRequirements": _requirements(shape, settings),
    }
    if settings.job_role:
        container["jobRoleArn"] = settings.job_role
    if settings.execution_role:
        container["executionRoleArn"] = settings.execution_role
    if settings.logs_group != DEFAULT_LOGS_GROUP:
        options = {"awslogs-group": settings.logs_group}
        container["logConfiguration"] = {"logDriver": "awslogs", "options": options}
    if settings.platform == "FARGATE":
        public = "ENABLED" if settings.assign_public_ip else "DISABLED"
        container["networkConfiguration"] = {"assignPublicIp": public}
    body: dict[str, Any] = {
        "type": "container",
        "containerProperties": container,
        "platformCapabilities": [settings.platform],
        "propagateTags": True,
    }
    digest = hashlib.sha256(repr(sorted(_flat(body))).encode()).hexdigest()[:16]
    stem = "seqera-" + _NOT_NAME.sub("-", shape.image).strip("-")
    body["jobDefinitionName"] = f"{stem[: _NAME_MAX - 17]}-{digest}"
    return body


def _flat(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    # A canonical form of the body for its digest (dict order never matters).
    if isinstance(value, Mapping):
        return [p for k, v in value.items() for p in _flat(v, f"{prefix}.{k}")]
    if isinstance(value, list):
        return [p for n, v in enumerate(value) for p in _flat(v, f"{prefix}[{n}]")]
    return [(prefix, repr(value))]


def submission_key(caller: str | None = None) -> str:
    """``seqera-`` and 24 hex digits: from the SHA-256 of the caller's key (``JobSpec.key``),
    the same every time, else new. What a job's name starts with."""
    if caller is None:
        return f"seqera-{uuid.uuid4().hex[:24]}"
    return f"seqera-{hashlib.sha256(caller.encode()).hexdigest()[:24]}"


def key_prefix(key: str) -> str:
    """The ListJobs ``JOB_NAME`` filter value that finds a key's job: its name's prefix."""
    return f"{key}-*"


def job_name(key: str, name: str) -> str:
    """``<key>-<name>``: the job's own name made of allowed characters, cut to 128."""
    tail = _NOT_NAME.sub("-", name).strip("-") or "job"
    return f"{key}-{tail}"[:_NAME_MAX]


def array_command() -> list[str]:
    """The command of an array's elements: element N runs ``$SEQERA_ARGV_N``, a
    shell-quoted argv (:func:`shlex.join`); ``AWS_BATCH_JOB_ARRAY_INDEX`` says N."""
    script = (
        f'var="{ARGV_PREFIX}${{AWS_BATCH_JOB_ARRAY_INDEX:?}}"\n'
        'eval "line=\\${$var:?}"\n'
        'eval "exec $line"\n'
    )
    return ["sh", "-c", script, "seqera-array"]


def submit_request(
    *,
    settings: BatchSettings,
    definition: str,
    queue: str,
    name: str,
    key: str,
    command: Sequence[str],
    env: Mapping[str, str],
    labels: Mapping[str, str],
    shape: Shape,
    time: int | None,
    array_size: int | None = None,
) -> dict[str, Any]:
    """The SubmitJob body for one job (or one array of ``array_size`` elements).

    Labels become tags (AWS's tag rules, at most 50 with the ``seqera-submission`` tag)
    propagated to the ECS task for cost allocation, and ``SEQERA_LABEL_*`` variables.
    """
    overrides = {
        **container_overrides(command, env, labels, usage=settings.report_usage),
        "resourceRequirements": _requirements(shape, settings),
    }
    tags = {t["key"]: t["value"] for t in ecs_tags(labels)}
    tags[SUBMISSION_TAG] = key
    if len(tags) > 50:
        raise ResourceError("labels", len(tags) - 1, "at most 49 labels on an AWS Batch job")
    body: dict[str, Any] = {
        "jobName": job_name(key, name),
        "jobQueue": queue,
        "jobDefinition": definition,
        "containerOverrides": overrides,
        "tags": tags,
        "propagateTags": True,
        "retryStrategy": {"attempts": settings.max_spot_attempts, "evaluateOnExit": _SPOT_RETRY},
    }
    if time is not None:
        body["timeout"] = {"attemptDurationSeconds": timeout_seconds(time)}
    if array_size is not None:
        body["arrayProperties"] = {"size": array_size}
    return body
