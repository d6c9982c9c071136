"""AWS Batch native forms: ``resourceRequirements`` VCPU, MEMORY (MiB) and GPU, and a timeout.

AWS Batch API reference, ``ResourceRequirement``: ``VCPU`` is the vCPUs reserved for the
container (on EC2 resources a whole number, each 1,024 CPU shares; Fargate takes 0.25,
0.5, 1, 2, 4, 8 or 16), ``MEMORY`` the hard limit in MiB (at least 4), ``GPU`` a whole
number of physical GPUs (EC2 only). ``JobTimeout.attemptDurationSeconds`` ends each
attempt after that many seconds and is at least 60. Every value is rounded up: a job
never receives less than it asked for.
"""

from __future__ import annotations

import math

from ..errors import ResourceError
from ..models import ResourceRequest, Submission
from ..units import MIB, ceil_div

__all__ = [
    "FARGATE_VCPUS",
    "MIN_MEMORY_MIB",
    "MIN_TIMEOUT",
    "memory_mib",
    "resource_requirements",
    "submission",
    "timeout_seconds",
    "vcpus",
]

MIN_MEMORY_MIB = 4
MIN_TIMEOUT = 60
#: The vCPU values a Fargate job may ask for (Batch API reference, ResourceRequirement).
FARGATE_VCPUS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)


def vcpus(cpus: float, fargate: bool = False) -> str:
    """The ``VCPU`` value for ``cpus``: the next whole vCPU on EC2, the next Fargate size
    on Fargate (16 at most)."""
    if not fargate:
        return str(max(1, math.ceil(cpus)))
    fitting = [size for size in FARGATE_VCPUS if size >= cpus]
    if not fitting:
        raise ResourceError("cpus", cpus, f"at most {FARGATE_VCPUS[-1]:g} vCPUs on Fargate")
    return f"{fitting[0]:g}"


def memory_mib(size: int) -> int:
    """``MEMORY`` in MiB covering ``size`` bytes (at least Batch's minimum of 4 MiB)."""
    return max(ceil_div(size, MIB), MIN_MEMORY_MIB)


def timeout_seconds(seconds: int) -> int:
    """``attemptDurationSeconds`` for a time limit: Batch refuses less than 60."""
    return max(seconds, MIN_TIMEOUT)


def resource_requirements(
    cpus: float, memory: int, gpus: int = 0, fargate: bool = False
) -> list[dict[str, str]]:
    """The ``resourceRequirements`` list of a container: VCPU, MEMORY and (if any) GPU."""
    if gpus and fargate:
        raise ResourceError("accelerator", gpus, "no GPUs: Fargate jobs cannot have any")
    found = [
        {"type": "VCPU", "value": vcpus(cpus, fargate)},
        {"type": "MEMORY", "value": str(memory_mib(memory))},
    ]
    if gpus:
        found.append({"type": "GPU", "value": str(gpus)})
    return found


def submission(request: ResourceRequest) -> Submission:
    """The ``containerOverrides`` and ``timeout`` of a SubmitJob for a request (EC2)."""
    request = request.on_one_machine("batch")  # several tasks: one container's cores
    native: dict[str, object] = {}
    notes = []
    requirements = []
    if request.cpus is not None:
        requirements.append({"type": "VCPU", "value": vcpus(request.cpus)})
    if request.memory is not None:
        requirements.append({"type": "MEMORY", "value": str(memory_mib(request.memory))})
    if request.accelerator is not None:
        requirements.append({"type": "GPU", "value": str(request.accelerator.count)})
        if request.accelerator.type:
            notes.append(
                f"GPU type '{request.accelerator.type}' is chosen by the compute environment's "
                "instance types, not by the job"
            )
    if requirements:
        native["resourceRequirements"] = requirements
    if request.time is not None:
        native["timeout"] = {"attemptDurationSeconds": timeout_seconds(request.time)}
    if request.queue:
        native["jobQueue"] = request.queue
    if request.disk is not None:
        notes.append(
            "AWS Batch has no per-job disk: the compute environment's launch template sizes "
            "the instances' volumes"
        )
    return Submission("batch", (), native, tuple(notes))
