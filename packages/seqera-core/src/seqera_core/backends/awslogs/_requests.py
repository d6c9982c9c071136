"""What ECS's RunTask and AWS Batch's SubmitJob ask of a container in the same words.

Both take a request's image, cpus, memory and GPUs (defaults from the backend's settings
where the request names none) and a container override of the same shape (``command``,
``environment`` as name/value pairs: RunTask's ``containerOverrides[]``, SubmitJob's
``containerOverrides``). What each service makes of them (cpu units or vCPUs, MiB, task
or job definitions) stays in its own family.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from ...errors import ResourceError
from ...labels import label_environment
from ...models import ResourceRequest
from ._usage import wrapped

__all__ = ["Asked", "asked", "container_overrides"]


@frozen
class Asked:
    """What a container job asks for in canonical units, defaults filled in."""

    image: str
    cpus: float
    memory: int  # bytes
    gpus: int
    disk: int | None  # bytes; None: what the service gives


def asked(
    request: ResourceRequest, *, backend: str, service: str, cpus: float, memory: int
) -> Asked:
    """A request on one machine of ``backend``; a request without an image is an error
    naming ``service``. ``cpus`` and ``memory`` (bytes) stand in for what it leaves out."""
    request = request.on_one_machine(backend)
    if not request.container:
        raise ResourceError("container", request.container, f"a container image for {service}")
    return Asked(
        request.container,
        request.cpus if request.cpus is not None else cpus,
        request.memory if request.memory is not None else memory,
        request.accelerator.count if request.accelerator else 0,
        request.disk,
    )


def container_overrides(
    command: Sequence[str], env: Mapping[str, str], labels: Mapping[str, str], *, usage: bool
) -> dict[str, Any]:
    """The container's ``command`` (under the usage wrapper when ``usage``) and its
    ``environment``: the labels' ``SEQERA_LABEL_*`` variables, then the job's own, which win."""
    environment = {**label_environment(labels), **env}
    override: dict[str, Any] = {"command": wrapped(command) if usage else list(command)}
    if environment:
        override["environment"] = [{"name": k, "value": v} for k, v in environment.items()]
    return override
