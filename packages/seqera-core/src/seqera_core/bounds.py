"""The largest number the contract allows at each edge, and the checks that keep to it.

One place for the maxima ``shared/schemas/*.json`` and ``shared/openapi/seqera-sidecar.yaml``
declare (a test reads them back from those files): a document past one is refused naming
the field (400 over HTTP, exit 2 on a CLI); what a resolver answers, or a task declares,
is capped to them like a resource limit (:func:`seqera_core.resolvers.resolve`); a
history row past them reads as not measured (:class:`seqera_core.history.TaskRecord`), so
no stored number can overflow a report into ``Infinity``.

Why these values: no machine gives one task 100,000 cores or 16 PiB; ten years is past
any scheduler's walltime and keeps Slurm's ``--time`` (minutes, 32-bit, ``0xffffffff``
meaning ``UNLIMITED``: slurm/src/common/parse_time.c) and Nextflow's ``Duration`` (a
``long`` of milliseconds) exact.
"""

from __future__ import annotations

import math
from typing import Any

from .models import ResourceLimits, ResourceRequest, ResourceResponse

__all__ = [
    "LARGEST",
    "MAXIMA",
    "MAX_ACCELERATORS",
    "MAX_BYTES",
    "MAX_CPUS",
    "MAX_CPU_PERCENT",
    "MAX_EPOCH_SECONDS",
    "MAX_SECONDS",
    "beyond",
    "shown",
    "within",
]

LARGEST = 2**63 - 1  # SQL BIGINT, SQLite INTEGER, Nextflow's long
MAX_CPUS = 100_000
MAX_BYTES = 2**54  # 16 PiB, memory or disk of one task
MAX_SECONDS = 3650 * 86_400  # ten years
MAX_ACCELERATORS = 4096
MAX_CPU_PERCENT = MAX_CPUS * 100  # Nextflow's %cpu: percent of one core
MAX_EPOCH_SECONDS = 253_402_300_800  # 10000-01-01T00:00:00Z: past any finish time
MAXIMA = ResourceLimits(cpus=MAX_CPUS, memory=MAX_BYTES, disk=MAX_BYTES, time=MAX_SECONDS)


def shown(value: Any) -> str:
    """``value`` for a message, a number too long to read (or to print: Python refuses
    ``str()`` past 4,300 digits) said by its size."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 80:
        return f"a {int(value.bit_length() * math.log10(2)) + 1}-digit number"
    return repr(value)


def within(value: float | None, maximum: float) -> float | None:
    """``value`` when it is a finite number from 0 to ``maximum``, else ``None`` (unknown)."""
    if value is None:
        return None
    # a plain int or float first (every history row's column): a NaN or an infinity fails
    # the comparison, so the checks below add nothing for it
    if value.__class__ is int or value.__class__ is float:
        return value if 0 <= value <= maximum else None
    if isinstance(value, bool):
        return None
    if not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value if 0 <= value <= maximum else None


# wire name, attribute path, maximum
_FIELDS = (
    ("cpus", ("cpus",), MAX_CPUS),
    ("memory_bytes", ("memory",), MAX_BYTES),
    ("disk_bytes", ("disk",), MAX_BYTES),
    ("time_seconds", ("time",), MAX_SECONDS),
    ("accelerator.count", ("accelerator", "count"), MAX_ACCELERATORS),
    ("resource_limits.cpus", ("resource_limits", "cpus"), MAX_CPUS),
    ("resource_limits.memory_bytes", ("resource_limits", "memory"), MAX_BYTES),
    ("resource_limits.disk_bytes", ("resource_limits", "disk"), MAX_BYTES),
    ("resource_limits.time_seconds", ("resource_limits", "time"), MAX_SECONDS),
    ("attempt", ("attempt",), LARGEST),
    ("task_index", ("task_index",), LARGEST),
    ("input_bytes", ("input_bytes",), LARGEST),
)


def beyond(obj: ResourceRequest | ResourceResponse, where: str = "$") -> list[str]:
    """One problem per number of ``obj`` past the contract's maximum, naming its field."""
    problems = []
    for name, path, maximum in _FIELDS:
        value: Any = obj
        for part in path:
            value = getattr(value, part, None)
        if value is not None and value > maximum:
            # as the wire's other problems read: what is wrong, then where (its JSON path)
            problems.append(f"{shown(value)} is larger than {maximum} @ {where}.{name}")
    return problems
