"""The settings the ECS and AWS Batch backends share; each family's class adds its own."""

from __future__ import annotations

from attrs import frozen

from ...units import GIB

__all__ = ["ContainerSettings"]


@frozen(kw_only=True)
class ContainerSettings:
    """What ``EcsSettings`` and ``BatchSettings`` both hold (keywords only, so each
    family's own required fields stay first).

    ``assign_public_ip`` is the network configuration's ``assignPublicIp`` (where the
    service takes one). Without ``region`` boto3's own configuration decides.
    ``default_cpus`` and ``default_memory`` (bytes) stand in for what a request leaves
    out. ``report_usage`` runs each command under the ``sh`` wrapper (``_usage``) that
    logs the container's peak memory (turn it off for images without ``sh``); a finished
    job's status then waits up to ``usage_wait`` seconds for that line to reach
    CloudWatch Logs.
    """

    assign_public_ip: bool = True
    region: str | None = None
    default_cpus: float = 1
    default_memory: int = 2 * GIB
    report_usage: bool = True
    usage_wait: float = 15.0
