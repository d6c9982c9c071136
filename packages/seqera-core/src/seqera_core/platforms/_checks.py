"""Plausibility checks for the unit mistakes a tired user makes."""

from __future__ import annotations

from ..models import ResourceRequest
from ..units import GIB, MIB, format_bytes, format_seconds

__all__ = ["suspicious"]

_SMALL_MEMORY = 32 * MIB
_HUGE_MEMORY = 64 * 1024 * GIB
_SHORT_TIME = 10
_LONG_TIME = 365 * 86400


def suspicious(request: ResourceRequest) -> tuple[str, ...]:
    """Warnings for values that are valid but probably not what was meant (4 MB for 4 GB)."""
    warnings = []
    if request.memory is not None and request.memory < _SMALL_MEMORY:
        warnings.append(
            f"memory is only {format_bytes(request.memory)}: check the unit "
            "(Snakemake mem_mb=4 is 4 MB, not 4 GB; Nextflow '4' is 4 bytes)"
        )
    if request.memory is not None and request.memory > _HUGE_MEMORY:
        warnings.append(f"memory is {format_bytes(request.memory)}: check the unit")
    if request.disk is not None and request.disk < _SMALL_MEMORY:
        warnings.append(f"disk is only {format_bytes(request.disk)}: check the unit")
    if request.time is not None and request.time < _SHORT_TIME:
        warnings.append(
            f"time is only {format_seconds(request.time)}: check the unit "
            "(a bare Nextflow number is milliseconds, Snakemake runtime is minutes)"
        )
    if request.time is not None and request.time > _LONG_TIME:
        warnings.append(f"time is {format_seconds(request.time)}: check the unit")
    return tuple(warnings)
