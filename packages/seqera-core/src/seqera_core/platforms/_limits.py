"""Capping resources by limits, saying what was capped."""

from __future__ import annotations

from typing import Any, TypeVar

import attrs
from attrs import frozen

from ..bounds import MAXIMA, shown
from ..models import ResourceLimits, ResourceRequest, ResourceResponse
from ..units import format_bytes, format_seconds

__all__ = ["Capped", "apply_limits", "cap"]

T = TypeVar("T", ResourceRequest, ResourceResponse)

_SHOWN = {"cpus": str, "memory": format_bytes, "disk": format_bytes, "time": format_seconds}


@frozen
class Capped:
    """A request after its limits were applied, and one note per value that was lowered."""

    request: ResourceRequest
    notes: tuple[str, ...] = ()


def cap(values: T, limits: ResourceLimits | None, source: str) -> tuple[T, tuple[str, ...]]:
    """Lower each of cpus, memory, disk and time above ``limits``; one note per change."""
    if limits is None:
        return values, ()
    changes: dict[str, Any] = {}
    notes = []
    for name, show in _SHOWN.items():
        value, limit = getattr(values, name), getattr(limits, name)
        if value is not None and limit is not None and value > limit:
            changes[name] = limit
            # a number too long for a float (a 309-digit time) is said by its size
            said = show(value) if value < 2**80 else shown(value)  # type: ignore[operator]
            notes.append(f"{name} {said} capped to the {source} {show(limit)}")  # type: ignore[operator]
    return (attrs.evolve(values, **changes) if changes else values), tuple(notes)


def apply_limits(request: ResourceRequest) -> Capped:
    """Lower each value above the contract's maxima (:mod:`seqera_core.bounds`), then above
    ``request.resource_limits``, to the limit (Nextflow semantics)."""
    bounded, bound_notes = cap(request, MAXIMA, "contract maximum")
    capped, notes = cap(bounded, request.resource_limits, "resource limit")
    return Capped(capped, bound_notes + notes)
