"""AWS ECS native forms: task ``cpu`` units, ``memory`` MiB, GPUs and managed-instance storage.

ECS counts 1024 cpu units per vCPU and memory in MiB (``RegisterTaskDefinition``);
GPUs go in ``resourceRequirements``; managed-instance storage is 30-16384 GiB.
ECS has no walltime: the dispatcher stops a task when its time has passed.
"""

from __future__ import annotations

from ..errors import ResourceError
from ..models import ResourceRequest, Submission
from ..units import GIB, MIB, ceil_div, ceil_scale

__all__ = [
    "MAX_STORAGE_GIB",
    "MIN_STORAGE_GIB",
    "cpu_units",
    "memory_mib",
    "storage_gib",
    "submission",
]

MIN_STORAGE_GIB = 30
MAX_STORAGE_GIB = 16384
_MIN_CPU_UNITS = 128


def cpu_units(cpus: float) -> int:
    """Task cpu units for a number of vCPUs, rounded up (at least ECS's minimum of 128)."""
    return max(ceil_scale(cpus, 1024), _MIN_CPU_UNITS)


def memory_mib(size: int) -> int:
    """Task memory in MiB covering ``size`` bytes."""
    return ceil_div(size, MIB)


def storage_gib(size: int) -> int:
    """Managed-instance storage in GiB covering ``size`` bytes, within ECS's 30-16384 GiB."""
    gib = max(ceil_div(size, GIB), MIN_STORAGE_GIB)
    if gib > MAX_STORAGE_GIB:
        raise ResourceError("disk", size, f"at most {MAX_STORAGE_GIB} GiB on ECS managed instances")
    return gib


def submission(request: ResourceRequest) -> Submission:
    """Task-definition values for a request."""
    request = request.on_one_machine("ecs")  # several tasks: one container's cores
    native: dict[str, object] = {}
    notes = []
    if request.cpus is not None:
        native["cpu"] = str(cpu_units(request.cpus))
    if request.memory is not None:
        native["memory"] = str(memory_mib(request.memory))
    if request.accelerator is not None:
        native["resourceRequirements"] = [{"type": "GPU", "value": str(request.accelerator.count)}]
        if request.accelerator.type:
            notes.append(
                f"GPU type '{request.accelerator.type}' is chosen by the capacity provider's "
                "instance types, not by the task definition"
            )
    if request.disk is not None:
        native["storageSizeGiB"] = storage_gib(request.disk)
    if request.time is not None:
        native["timeoutSeconds"] = request.time
        notes.append("ECS has no walltime: the task is stopped after timeoutSeconds")
    return Submission("ecs", (), native, tuple(notes))
