"""ECS request bodies as pure functions: task definitions, their hash and family, RunTask.

A task definition holds what ECS needs to place a task (image, task cpu and memory, GPUs,
roles, log configuration); everything that differs from one task to the next (command,
environment, labels, instance type) goes in RunTask, so tasks of one shape share one
definition. The definition's hash covers the whole registration body plus the storage the
task needs, so a change of role or log group never reuses a stale definition.
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import field, frozen

from ...dialects.ecs import cpu_units, memory_mib, storage_gib
from ...errors import ResourceError
from ...labels import ecs_tags
from ...models import ResourceRequest
from ..awslogs import ContainerSettings, asked, container_overrides

__all__ = [
    "CONTAINER",
    "HASH_TAG",
    "SUBMISSION_TAG",
    "EcsSettings",
    "Shape",
    "family_name",
    "log_stream",
    "run_task_request",
    "shape_of",
    "submission_key",
    "task_definition_request",
]

CONTAINER = "main"
HASH_TAG = "seqera:definition-hash"
# Family names: up to 255 letters, digits, hyphens and underscores (RegisterTaskDefinition).
_NOT_FAMILY = re.compile(r"[^A-Za-z0-9_-]+", re.ASCII)
_FAMILY_MAX = 255
_INSTANCE_TYPE = re.compile(r"[a-z0-9][a-z0-9-]*\.[a-z0-9-]+\Z", re.ASCII)


def _strings(value: Sequence[str] | str | None) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):  # "subnet-a,subnet-b" as an environment variable holds it
        value = value.split(",")
    return tuple(part.strip() for part in value if part.strip())


def _positive(_: Any, attribute: Any, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ResourceError(f"ecs.{attribute.name}", value, "an integer >= 1")


def _required(_: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ResourceError(f"ecs.{attribute.name}", value, "a non-empty string")


@frozen
class EcsSettings(ContainerSettings):
    """Where and how ECS tasks run. Only ``cluster`` and ``execution_role`` are required.

    Empty ``subnets``/``security_groups`` are discovered from the default VPC; without
    ``capacity_provider`` the cluster's first managed-instances provider is used.
    ``max_spot_attempts`` counts every start of a task, the first included: 1 never
    resubmits after a spot interruption. The fields ECS shares with AWS Batch (region,
    public IP, defaults, the usage report) are :class:`~..awslogs.ContainerSettings`'.
    """

    cluster: str = field(validator=_required)
    execution_role: str = field(validator=_required)
    task_role: str | None = None
    subnets: tuple[str, ...] = field(default=(), converter=_strings)
    security_groups: tuple[str, ...] = field(default=(), converter=_strings)
    logs_group: str = field(default="/aws/ecs/seqera", validator=_required)
    logs_prefix: str = field(default="seqera", validator=_required)
    capacity_provider: str | None = None
    max_spot_attempts: int = field(default=5, validator=_positive)


@frozen
class Shape:
    """What a task definition is made of: image, cpu units, memory MiB, GPUs, storage GiB."""

    image: str
    cpu: int
    memory: int
    gpus: int = 0
    storage: int | None = None


def shape_of(request: ResourceRequest, settings: EcsSettings) -> Shape:
    """The task-definition shape of a request; a request without an image is an error."""
    job = asked(request, backend="ecs", service="ECS", cpus=settings.default_cpus,
                memory=settings.default_memory)  # fmt: skip
    storage = None if job.disk is None else storage_gib(job.disk)
    return Shape(job.image, cpu_units(job.cpus), memory_mib(job.memory), job.gpus, storage)


def family_name(image: str) -> str:
    """``seqera-<image>`` with every run of other characters as ``-``, within 255 characters."""
    family = "seqera-" + _NOT_FAMILY.sub("-", image).strip("-")
    if len(family) > _FAMILY_MAX:  # keep long names apart by a digest of the whole image
        digest = hashlib.sha256(image.encode()).hexdigest()[:12]
        family = f"{family[: _FAMILY_MAX - 13]}-{digest}"
    return family


def task_definition_request(
    shape: Shape, settings: EcsSettings, region: str
) -> tuple[dict[str, Any], str]:
    """The RegisterTaskDefinition body for a shape, with its hash already among its tags."""
    container: dict[str, Any] = {
        "name": CONTAINER,
        "image": shape.image,
        "essential": True,
        "logConfiguration": {
            "logDriver": "awslogs",
            "options": {
                "awslogs-group": settings.logs_group,
                "awslogs-region": region,
                "awslogs-stream-prefix": settings.logs_prefix,
            },
        },
    }
    if shape.gpus:
        container["resourceRequirements"] = [{"type": "GPU", "value": str(shape.gpus)}]
    body: dict[str, Any] = {
        "family": family_name(shape.image),
        "requiresCompatibilities": ["MANAGED_INSTANCES"],
        "networkMode": "awsvpc",
        "cpu": str(shape.cpu),
        "memory": str(shape.memory),
        "executionRoleArn": settings.execution_role,
        "containerDefinitions": [container],
    }
    if settings.task_role:
        body["taskRoleArn"] = settings.task_role
    # Managed instances take storage from the capacity provider's launch template, not
    # from the definition; it is still part of the identity, so a task asking for more
    # disk is never matched with a definition checked for less.
    identity = json.dumps({"body": body, "storageGiB": shape.storage}, sort_keys=True)
    digest = hashlib.sha256(identity.encode()).hexdigest()[:32]
    body["tags"] = [{"key": HASH_TAG, "value": digest}]
    return body, digest


SUBMISSION_TAG = "seqera-submission"


def submission_key(attempt: int = 0, base: str = "", caller: str | None = None) -> str:
    """A new submission key (``seqera-`` and 24 hex digits: ``startedBy`` takes 36
    characters), or ``base`` for its ``attempt``-th restart (a restart is a new task, so it
    needs its own token). With a ``caller``'s own key (``JobSpec.key``, of any length),
    the same key every time, from its SHA-256: what ``EcsBackend.find`` asks ListTasks for."""
    if base:
        return f"{base[:32]}-r{attempt}"
    if caller is not None:
        return f"seqera-{hashlib.sha256(caller.encode()).hexdigest()[:24]}"
    return f"seqera-{uuid.uuid4().hex[:24]}"


def run_task_request(
    *,
    settings: EcsSettings,
    definition: str,
    capacity_provider: str,
    subnets: Sequence[str],
    security_groups: Sequence[str],
    command: Sequence[str],
    env: Mapping[str, str],
    labels: Mapping[str, str],
    machine_type: str | None,
    key: str = "",
) -> dict[str, Any]:
    """The RunTask body for one task: one task, its command, environment, labels as tags.

    ``key`` is the submission's own identity: RunTask's ``clientToken`` (ECS starts one
    task for a token however often the call is repeated), ``startedBy`` (what ListTasks
    filters on, so the backend can ask whether a call whose answer was lost started it)
    and a ``seqera-submission`` tag.
    """
    override = {
        "name": CONTAINER,
        **container_overrides(command, env, labels, usage=settings.report_usage),
    }
    body: dict[str, Any] = {
        "cluster": settings.cluster,
        "taskDefinition": definition,
        "count": 1,
        "startedBy": "seqera",
        "capacityProviderStrategy": [{"capacityProvider": capacity_provider, "weight": 1}],
        "networkConfiguration": {
            "awsvpcConfiguration": {
                "subnets": list(subnets),
                "securityGroups": list(security_groups),
                "assignPublicIp": "ENABLED" if settings.assign_public_ip else "DISABLED",
            }
        },
        "overrides": {"containerOverrides": [override]},
    }
    tags = ecs_tags(labels)
    if key:
        body["clientToken"] = key
        body["startedBy"] = key
        tags = [*tags, {"key": SUBMISSION_TAG, "value": key}]
    if tags:
        body["tags"] = tags
    if machine_type:
        if not _INSTANCE_TYPE.match(machine_type):
            raise ResourceError("machine_type", machine_type, "an EC2 instance type, e.g. m5.large")
        # Cluster query language: a built-in attribute of every container instance.
        expression = f"attribute:ecs.instance-type == {machine_type}"
        body["placementConstraints"] = [{"type": "memberOf", "expression": expression}]
    return body


def log_stream(settings: EcsSettings, task_arn: str) -> str:
    """The awslogs stream of a task's container: ``<prefix>/<container>/<task id>``."""
    return f"{settings.logs_prefix}/{CONTAINER}/{task_arn.rsplit('/', 1)[-1]}"
