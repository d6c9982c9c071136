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

import attrs
from attrs import frozen

from ...errors import ResourceError, UsageError
from ...units import GIB, MIB

__all__ = ["FARGATE_LIMITS", "Instance", "QueueLimits", "describe_queues", "queue_limits"]


@frozen
class Instance:
    """One instance type a queue may launch: vCPUs, memory bytes, GPUs."""

    name: str
    cpus: float
    memory: int
    gpus: int = 0


@frozen
class QueueLimits:
    """A job queue's instance types (none: their sizes are not known here) and the largest
    job any of them holds: vCPUs, memory bytes and GPUs, each the most of any type."""

    name: str
    instances: tuple[Instance, ...] = ()
    fargate: bool = False

    @property
    def cpus(self) -> float | None:
        """The most vCPUs one job can have, None when not known."""
        return max((i.cpus for i in self.instances), default=None)

    @property
    def memory(self) -> int | None:
        """The most memory (bytes) one job can have, None when not known."""
        return max((i.memory for i in self.instances), default=None)

    @property
    def gpus(self) -> int | None:
        """The most GPUs one job can have, None when not known."""
        return max((i.gpus for i in self.instances), default=None)

    def check(self, cpus: float, memory: int, gpus: int) -> None:
        """Refuse a job no instance type of this queue can hold (it would stay RUNNABLE)."""
        if not self.instances or any(
            cpus <= i.cpus and memory <= i.memory and gpus <= i.gpus for i in self.instances
        ):
            return
        sizes = ", ".join(
            f"{i.name} ({i.cpus:g} vCPUs, {i.memory // MIB} MiB, {i.gpus} GPUs)"
            for i in sorted(self.instances, key=lambda i: (i.gpus, i.cpus, i.memory))
        )
        # Name what is missing on the instances that have everything asked before it.
        with_gpus = [i for i in self.instances if i.gpus >= gpus]
        with_cpus = [i for i in with_gpus if i.cpus >= cpus]
        field, value = (
            ("accelerator", gpus) if not with_gpus
            else ("cpus", cpus) if not with_cpus else ("memory", memory)
        )  # fmt: skip
        raise ResourceError(
            field, value, f"a job one instance type of job queue {self.name} holds: {sizes}"
        )


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
    instances: list[Instance] = []
    fargate = False
    for environment in found.get("computeEnvironments") or []:
        limits = _environment(call, ec2, name, environment.get("computeResources") or {})
        if limits is None:
            return QueueLimits(name)  # one environment of unknown size: no limit known
        instances += limits.instances
        fargate = fargate or limits.fargate
    return QueueLimits(name, tuple(instances), fargate)


def _environment(
    call: Callable[..., Any], ec2: Any, queue: str, resources: dict[str, Any]
) -> QueueLimits | None:
    kind = str(resources.get("type", ""))
    if kind.startswith("FARGATE"):
        cpus, memory = FARGATE_LIMITS
        return QueueLimits(queue, (Instance(kind, cpus, memory),), fargate=True)
    wanted = [str(t) for t in resources.get("instanceTypes") or []]
    if not wanted or any(t == "optimal" or t.startswith("default_") for t in wanted):
        return None
    types = _instance_types(call, ec2, wanted)
    if not types:
        return None
    cap = resources.get("maxvCpus")
    if isinstance(cap, int) and cap > 0:  # the environment never has more vCPUs in all
        types = [attrs.evolve(t, cpus=min(t.cpus, cap)) for t in types]
    return QueueLimits(queue, tuple(types))


def _instance_types(call: Callable[..., Any], ec2: Any, wanted: list[str]) -> list[Instance]:
    """Each type's size, every member of a family (``m5``)."""
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
        Instance(
            str(t["InstanceType"]),
            float(t.get("VCpuInfo", {}).get("DefaultVCpus", 0)),
            int(t.get("MemoryInfo", {}).get("SizeInMiB", 0)) * MIB,
            sum(int(g.get("Count", 0)) for g in (t.get("GpuInfo") or {}).get("Gpus") or []),
        )
        for t in found
    ]
