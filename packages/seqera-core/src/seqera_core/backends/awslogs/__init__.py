"""Container jobs whose usage comes from their log: what the ECS and AWS Batch backends share.

Both run a job's command in a container whose output the ``awslogs`` driver sends to
CloudWatch Logs, under a ``sh`` wrapper that ends it with the container's peak memory and
CPU time (``_usage``); both read that line and the job's output back (``_logs``), hold a
job's end until the line is read (``_jobs``), fill a container's resources and override
the same way (``_requests``), make their AWS calls alike (``_calls``) and share some
settings (``_settings``). Each service's own API stays in its family (``ecs``,
``awsbatch``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import exports

if TYPE_CHECKING:
    from ._calls import call, chunks, counted, error_code
    from ._jobs import LoggedJob, UsageLog
    from ._logs import output, peaks
    from ._requests import Asked, asked, container_overrides
    from ._settings import ContainerSettings
    from ._usage import MARKER, WRAPPER, parse_cpu, parse_usage, wrapped

# each public name and the module that defines it
_HOMES = {
    "MARKER": "_usage",
    "WRAPPER": "_usage",
    "Asked": "_requests",
    "ContainerSettings": "_settings",
    "LoggedJob": "_jobs",
    "UsageLog": "_jobs",
    "asked": "_requests",
    "call": "_calls",
    "chunks": "_calls",
    "container_overrides": "_requests",
    "counted": "_calls",
    "error_code": "_calls",
    "output": "_logs",
    "parse_cpu": "_usage",
    "parse_usage": "_usage",
    "peaks": "_logs",
    "wrapped": "_usage",
}

__all__ = [
    "MARKER",
    "WRAPPER",
    "Asked",
    "ContainerSettings",
    "LoggedJob",
    "UsageLog",
    "asked",
    "call",
    "chunks",
    "container_overrides",
    "counted",
    "error_code",
    "output",
    "parse_cpu",
    "parse_usage",
    "peaks",
    "wrapped",
]

__getattr__ = exports(__name__, _HOMES)
