"""What an AWS Batch job queue can run: the largest job its compute environments hold.

A job queue lists compute environments (DescribeJobQueues ``computeEnvironmentOrder``);
a managed EC2 or Spot one launches instances of its ``computeResources.instanceTypes``
(types such as ``m5.2xlarge`` or whole families such as ``m5``) up to ``maxvCpus`` in
all, a Fargate one gives a job at most 16 vCPUs and 120 GiB (AWS Batch User Guide,
"Fargate job definitions"). One job runs on one instance, so a queue's limits are those
of its largest instance type (EC2 DescribeInstanceTypes: ``VCpuInfo.DefaultVCpus``,
``MemoryInfo.SizeInMiB``, ``GpuInfo``), capped by ``maxvCpus``. A job larger than every
limit would wait in RUNNABLE for ever: the backend refuses it, naming the limit.

``optimal`` and ``default_*`` let Batch pick among families it chooses: their sizes are
not known here, and such a queue has no memory limit in this module's eyes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from attrs import frozen

from ...errors import ResourceError, UsageError
from ...units import GIB, MIB

__all__ = ["FARGATE_LIMITS", "QueueLimits", "describe_queues", "queue_limits"]


@frozen
class QueueLimits:
    """A job queue's largest job: vCPUs, memory bytes and GPUs (None: not known)."""

    name: str
    cpus: float | None = None
    memory: int | None = None
    gpus: int | None = None
    fargate: bool = False
    instance: str | None = None  # the instance type the limits come from

    def check(self, cpus: float, memory: int, gpus: int) -> None:
        """Refuse a job no instance of this queue can hold (it would stay RUNNABLE)."""
        where = f"job queue {self.name}" + (f" (largest: {self.instance})" if self.instance else "")
        if self.cpus is not None and cpus > self.cpus:
            raise ResourceError("cpus", cpus, f"at most {self.cpus:g} vCPUs on {where}")
        if self.memory is not None and memory > self.memory:
            raise ResourceError("memory", memory, f"at most {self.memory // MIB} MiB on {where}")
        if gpus and self.gpus is not None and gpus > self.gpus:
            raise ResourceError("accelerator", gpus, f"at most {self.gpus} GPUs on {where}")


FARGATE_LIMITS = (16.0, 120 * GIB)


def describe_queues(call: Callable[..., Any], batch: Any, names: Iterable[str] | None) -> list[Any]:
    """Every job queue named (all of them when ``names`` is None), paginated."""
    params: dict[str, Any] = {} if names is None else {"jobQueues": list(names)}
    found: list[Any] = []
    while True:
        page = call(batch.describe_job_queues, **params)
        found += page.get("jobQueues") or []
        if not page.get("nextToken"):
            return found
        params["nextToken"] = page["nextToken"]


def queue_limits(call: Callable[..., Any], batch: Any, ec2: Any, name: str) -> QueueLimits:
    """The limits of job queue ``name``.

    Raises:
        UsageError: no such queue, or it is not ENABLED and VALID.
    """
    queues = describe_queues(call, batch, [name])
    if not queues:
        raise UsageError(f"AWS Batch job queue {name!r} does not exist (batch.queue)")
    queue = queues[0]
    if queue.get("state") != "ENABLED" or queue.get("status", "VALID") != "VALID":
        raise UsageError(
            f"AWS Batch job queue {name!r} is {queue.get('state')}/{queue.get('status')}, "
            "not ENABLED/VALID"
        )
    order = sorted(queue.get("computeEnvironmentOrder") or [], key=lambda e: e.get("order", 0))
    arns = [e["computeEnvironment"] for e in order]
    found = call(batch.describe_compute_environments, computeEnvironments=arns) if arns else {}
    best = QueueLimits(name, 0, 0, 0)
    for environment in found.get("computeEnvironments") or []:
        limits = _environment(call, ec2, name, environment.get("computeResources") or {})
        if limits is None:
            return QueueLimits(name)  # one environment of unknown size: no limit known
        if (limits.cpus or 0, limits.memory or 0) > (best.cpus or 0, best.memory or 0):
            best = limits
    return best if best.cpus else QueueLimits(name)


def _environment(
    call: Callable[..., Any], ec2: Any, queue: str, resources: dict[str, Any]
) -> QueueLimits | None:
    kind = str(resources.get("type", ""))
    if kind.startswith("FARGATE"):
        cpus, memory = FARGATE_LIMITS
        return QueueLimits(queue, cpus, memory, 0, fargate=True, instance=kind)
    wanted = [str(t) for t in resources.get("instanceTypes") or []]
    if not wanted or any(t == "optimal" or t.startswith("default_") for t in wanted):
        return None
    types = _instance_types(call, ec2, wanted)
    if not types:
        return None
    largest = max(types, key=lambda t: (t[1], t[2]))
    cap = resources.get("maxvCpus")
    cpus = float(min(largest[1], cap)) if isinstance(cap, int) and cap > 0 else float(largest[1])
    return QueueLimits(queue, cpus, largest[2], max(t[3] for t in types), instance=largest[0])


def _instance_types(
    call: Callable[..., Any], ec2: Any, wanted: list[str]
) -> list[tuple[str, int, int, int]]:
    """(name, vCPUs, memory bytes, GPUs) of each type, a family's (``m5``) every member."""
    exact = [t for t in wanted if "." in t]
    families = [f"{t}.*" for t in wanted if "." not in t]
    found: list[Any] = []
    for params in (
        {"InstanceTypes": exact} if exact else None,
        {"Filters": [{"Name": "instance-type", "Values": families}]} if families else None,
    ):
        while params is not None:
            page = call(ec2.describe_instance_types, **params)
            found += page.get("InstanceTypes") or []
            params = {**params, "NextToken": page["NextToken"]} if page.get("NextToken") else None
    return [
        (
            str(t["InstanceType"]),
            int(t.get("VCpuInfo", {}).get("DefaultVCpus", 0)),
            int(t.get("MemoryInfo", {}).get("SizeInMiB", 0)) * MIB,
            sum(int(g.get("Count", 0)) for g in (t.get("GpuInfo") or {}).get("Gpus") or []),
        )
        for t in found
    ]
