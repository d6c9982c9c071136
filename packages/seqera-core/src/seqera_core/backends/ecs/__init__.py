"""AWS ECS: each job a task on a cluster's managed-instances capacity (extra ``ecs``).

``EcsBackend`` (``_backend``) registers one task definition per image and shape
(``_definitions``, ``_payloads``), runs and watches tasks (``_status``), finds the
cluster's capacity provider and network (``_cluster``, ``_network``) and reads each
task's peak memory from CloudWatch Logs (the usage wrapper and reader it shares with AWS
Batch: ``backends.awslogs``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import exports

if TYPE_CHECKING:
    from ._backend import EcsBackend, EcsError, EcsSettings

# each public name and the module that defines it
_HOMES = {
    "EcsBackend": "_backend",
    "EcsError": "_backend",
    "EcsSettings": "_backend",
}

__all__ = [
    "EcsBackend",
    "EcsError",
    "EcsSettings",
]

__getattr__ = exports(__name__, _HOMES)
