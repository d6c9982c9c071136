"""A platform definition written from what an AWS Batch account says of its job queues,
as ``seqera platform generate --from slurm`` does from scontrol and sinfo.

Each job queue (DescribeJobQueues) becomes a queue of the platform whose limits are the
largest job one of its instance types holds (:func:`~._queues.queue_limits`); a queue
that is not ENABLED, or whose compute environments let Batch choose the instance types
(``optimal``), is written without limits and with ``auto: false``, so it is used only
when a job names it. Prices are not in Batch: the reader adds cost rates.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ...units import MIB

if TYPE_CHECKING:
    from ._backend import AwsBatchBackend

__all__ = ["platform_yaml"]


def _quoted(name: object) -> str:
    # A queue may be called "off" or "1": as bare YAML those are a boolean and a number.
    return json.dumps(str(name))


def platform_yaml(name: str, backend: AwsBatchBackend) -> str:
    """The platform YAML of every job queue the backend's account has."""
    queues = backend.queues()
    lines = [
        "# Written by `seqera platform generate --from batch` from DescribeJobQueues,",
        "# DescribeComputeEnvironments and EC2 DescribeInstanceTypes; review it: cost rates",
        "# are not in AWS Batch, and an instance's whole memory is more than a job gets.",
        f"name: {name}",
        "scheduler: batch",
    ]
    enabled = [q for q in queues if q.get("state") == "ENABLED"]
    if enabled:  # Batch has no default queue: the highest priority one stands for it
        best = max(enabled, key=lambda q: int(q.get("priority") or 0))
        lines.append(f"default_queue: {_quoted(best['jobQueueName'])}")
    lines.append("queues:" if queues else "queues: {}")
    for queue in queues:
        title = str(queue["jobQueueName"])
        lines.append(f"  {_quoted(title)}:")
        if queue.get("state") != "ENABLED" or queue.get("status", "VALID") != "VALID":
            lines.append(f"    auto: false  # {queue.get('state')}/{queue.get('status')}")
            continue
        limits = backend.limits(title)
        if not limits.instances:
            lines.append("    auto: false  # instance types chosen by Batch: sizes unknown")
            continue
        lines.append(f"    max_cpus: {limits.cpus:g}")
        lines.append(f"    max_memory: {(limits.memory or 0) // MIB} MiB")
        lines.append(f"    max_gpus: {limits.gpus}")
        kinds = ", ".join(sorted(i.name for i in limits.instances))
        lines.append(f"    # instance types: {kinds}")
    return "\n".join(lines) + "\n"
