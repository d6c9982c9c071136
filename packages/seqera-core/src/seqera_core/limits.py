"""Capping a request by its resource limits, saying what was capped."""

from __future__ import annotations

from typing import Any

import attrs
from attrs import frozen

from .models import ResourceRequest
from .units import format_bytes, format_seconds

__all__ = ["Capped", "apply_limits"]


@frozen
class Capped:
    """A request after its limits were applied, and one note per value that was lowered."""

    request: ResourceRequest
    notes: tuple[str, ...] = ()


def apply_limits(request: ResourceRequest) -> Capped:
    """Lower each value above ``request.resource_limits`` to the limit (Nextflow semantics)."""
    limits = request.resource_limits
    if limits is None:
        return Capped(request)
    changes: dict[str, Any] = {}
    notes = []
    shown = {"cpus": str, "memory": format_bytes, "disk": format_bytes, "time": format_seconds}
    for name, show in shown.items():
        value = getattr(request, name)
        limit = getattr(limits, name)
        if value is not None and limit is not None and value > limit:
            changes[name] = limit
            notes.append(
                f"{name} {show(value)} capped to the resource limit {show(limit)}"  # type: ignore[operator]
            )
    if not changes:
        return Capped(request)
    return Capped(attrs.evolve(request, **changes), tuple(notes))
