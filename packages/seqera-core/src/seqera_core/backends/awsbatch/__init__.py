"""AWS Batch: each job a SubmitJob on a job queue, arrays natively (extra ``batch``).

``AwsBatchBackend`` (``_backend``) registers one job definition per image and shape and
submits jobs with their command, labels as tags, timeout and Spot retries
(``_payloads``), reads what each queue can hold (``_queues``) and what DescribeJobs says
(``_status``); peak memory comes from the usage wrapper and logs reader it shares with
ECS (``backends.awslogs``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import exports

if TYPE_CHECKING:
    from ._backend import AwsBatchBackend, AwsBatchError
    from ._payloads import BatchSettings
    from ._queues import QueueLimits

# each public name and the module that defines it
_HOMES = {
    "AwsBatchBackend": "_backend",
    "AwsBatchError": "_backend",
    "BatchSettings": "_payloads",
    "QueueLimits": "_queues",
}

__all__ = [
    "AwsBatchBackend",
    "AwsBatchError",
    "BatchSettings",
    "QueueLimits",
]

__getattr__ = exports(__name__, _HOMES)
