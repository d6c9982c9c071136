"""Validation of a request against a platform, before anything is submitted.

The request is capped by its own resource limits, then the platform's multipliers are
applied. A queue fits when it allows what the task asked for; the multiplied values are
then capped to that queue (with a warning), so the effective values never exceed the
chosen queue's limits. With no queue named, the cheapest automatic queue that fits is
chosen; one that needs no capping is preferred, then the default queue on a tie.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs
from attrs import frozen

from ..models import ResourceLimits, ResourceRequest
from ..units import ceil_scale, format_bytes, format_seconds
from ._limits import apply_limits, cap

if TYPE_CHECKING:  # the definitions never import validation: no circle
    from ._definitions import Platform, Queue

__all__ = ["ValidationReport", "validate"]

# A job asking for more than this share of a queue's cpus or memory needs a nearly idle
# node, which a busy cluster rarely has: it is valid, but may wait long to start.
_CROWDED = 0.9
_LIMITS = {"cpus": "max_cpus", "memory": "max_memory", "time": "max_walltime", "gpus": "max_gpus"}


@frozen
class ValidationReport:
    """What validation found: errors (never runs here), warnings, suggestions, the choice.

    ``request`` is the effective request: limits, multipliers and queue caps applied, and
    ``queue`` set. Costs are per hour and, when the time is known, for the whole job.
    """

    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    suggestions: tuple[str, ...]
    queue: str | None
    request: ResourceRequest
    hourly_cost: float | None = None
    estimated_cost: float | None = None

    @property
    def ok(self) -> bool:
        """Whether the job can run on this platform."""
        return not self.errors


def _show(dimension: str, value: float) -> str:
    if dimension == "memory":
        return format_bytes(int(value))
    if dimension == "time":
        return format_seconds(int(value))
    return f"{value:g}"


def _needs(request: ResourceRequest) -> dict[str, float]:
    # A value the task did not declare fits every queue: the scheduler's default applies.
    return {
        "cpus": request.cpus or 0,
        "memory": request.memory or 0,
        "time": request.time or 0,
        "gpus": request.accelerator.count if request.accelerator else 0,
    }


def _too_big(queue: Queue, needs: Mapping[str, float]) -> dict[str, float]:
    over = {}
    for dimension, attribute in _LIMITS.items():
        limit = getattr(queue, attribute)
        if limit is not None and needs[dimension] > limit:
            over[dimension] = limit
    return over


def _scaled(platform: Platform, request: ResourceRequest) -> tuple[ResourceRequest, list[str]]:
    changes: dict[str, Any] = {}
    notes = []
    for name in ("cpus", "memory", "time"):
        value, factor = getattr(request, name), platform.multipliers.factor(name)
        if value is None or factor == 1:
            continue
        # Rounded up: cpus to a thousandth of a core, memory to a byte, time to a second.
        if name == "cpus":
            changes[name] = ceil_scale(value, factor * 1000) / 1000
        else:
            changes[name] = ceil_scale(value, factor)
        notes.append(
            f"{name} {_show(name, value)} x {float(factor):g} (platform multiplier) = "
            f"{_show(name, changes[name])}"
        )
    return (attrs.evolve(request, **changes) if changes else request), notes


def _caps(queue: Queue) -> ResourceLimits:
    return ResourceLimits(cpus=queue.max_cpus, memory=queue.max_memory, time=queue.max_walltime)


def _effective(queue: Queue, scaled: ResourceRequest) -> tuple[ResourceRequest, tuple[str, ...]]:
    """``scaled`` capped to ``queue`` (only a multiplier can push a fitting request over)."""
    capped, notes = cap(scaled, _caps(queue), f"queue {queue.name} limit")
    return attrs.evolve(capped, queue=queue.name), notes


def _hourly(queue: Queue, request: ResourceRequest) -> float:
    gpus = request.accelerator.count if request.accelerator else 0
    # An undeclared cpus count is the scheduler's default of one core.
    return queue.cost.hourly(request.cpus or 1, request.memory or 0, gpus)


def _alternatives(
    platform: Platform, needs: Mapping[str, float], dimension: str, instead_of: str
) -> list[str]:
    """Queues that allow ``needs[dimension]``, each with what would still stop the job."""
    found = []
    for queue in platform.queues:
        limit = getattr(queue, _LIMITS[dimension])
        if queue.name == instead_of or (limit is not None and needs[dimension] > limit):
            continue
        if limit is None:
            allows = f"queue {queue.name} has no {dimension} limit"
        else:
            allows = f"queue {queue.name} allows {_show(dimension, limit)} for {dimension}"
        blockers = _too_big(queue, needs)
        if blockers:
            other, its = next(iter(blockers.items()))
            found.append(f"{allows}, but its {other} limit is {_show(other, its)}")
        elif queue.auto or queue.name == platform.default_queue:
            found.append(allows)
        else:
            found.append(f"{allows}: ask for it by name")
    return found


def _nothing_fits(
    platform: Platform, needs: Mapping[str, float], candidates: list[Queue]
) -> tuple[list[str], list[str]]:
    """Errors naming each value no usable queue allows, and the queues that would."""
    errors: list[str] = []
    suggestions: list[str] = []
    if not candidates:
        errors.append(
            f"no queue of {platform.name} is chosen automatically (every one has auto: false "
            "and there is no default_queue): the job must name its queue"
        )
        for queue in platform.queues:
            if not _too_big(queue, needs):
                suggestions.append(f"queue {queue.name} fits: ask for it by name")
    default = platform.queue(platform.default_queue or "")
    for dimension, attribute in _LIMITS.items():
        need = needs[dimension]
        limits = [getattr(q, attribute) for q in platform.queues]
        if None not in limits and need > max(limits):
            largest = max(platform.queues, key=lambda q: getattr(q, attribute))
            most = _show(dimension, getattr(largest, attribute))
            errors.append(
                f"{dimension} {_show(dimension, need)} exceeds every queue of {platform.name} "
                f"(the largest, {largest.name}, allows {most})"
            )
            continue
        # The queue the job would be sent to: the default, else the largest automatic one.
        target = default
        if target is None:
            usable = [getattr(q, attribute) for q in candidates]
            if not usable or None in usable:
                continue
            target = max(candidates, key=lambda q: getattr(q, attribute))
        limit = getattr(target, attribute)
        if limit is not None and need > limit:
            errors.append(
                f"{dimension} {_show(dimension, need)} exceeds queue {target.name} "
                f"({_show(dimension, limit)})"
            )
            suggestions += _alternatives(platform, needs, dimension, target.name)
    if not errors:
        asked = ", ".join(f"{d} {_show(d, v)}" for d, v in needs.items() if v)
        errors.append(f"no queue of {platform.name} allows {asked} together")
        for queue in candidates:
            other, its = next(iter(_too_big(queue, needs).items()))
            suggestions.append(f"queue {queue.name}'s {other} limit is {_show(other, its)}")
    return errors, suggestions


def _named(
    platform: Platform, needs: Mapping[str, float], name: str
) -> tuple[Queue | None, list[str], list[str]]:
    queue = platform.queue(name)
    if queue is None:
        names = ", ".join(q.name for q in platform.queues)
        return (
            None,
            [f"queue {name!r} does not exist on {platform.name}; its queues are {names}"],
            [],
        )
    errors, suggestions = [], []
    for dimension, limit in _too_big(queue, needs).items():
        errors.append(
            f"{dimension} {_show(dimension, needs[dimension])} exceeds queue {queue.name} "
            f"({_show(dimension, limit)})"
        )
        suggestions += _alternatives(platform, needs, dimension, queue.name)
    return queue, errors, suggestions


def _crowding(queue: Queue, effective: ResourceRequest) -> list[str]:
    warnings = []
    for dimension in ("cpus", "memory"):
        value, limit = _needs(effective)[dimension], getattr(queue, _LIMITS[dimension])
        if limit and value >= _CROWDED * limit:
            warnings.append(
                f"{dimension} {_show(dimension, value)} is {value / limit:.0%} of queue "
                f"{queue.name}'s limit ({_show(dimension, limit)}): it needs a nearly idle "
                "node and may wait long to start"
            )
    if effective.time is None and queue.max_walltime is not None:
        warnings.append(
            f"no time given: queue {queue.name}'s limit {format_seconds(queue.max_walltime)} "
            "applies; a shorter time lets the scheduler start the job sooner (backfill)"
        )
    return warnings


def validate(platform: Platform, request: ResourceRequest) -> ValidationReport:
    """Check ``request`` against ``platform``: errors, warnings, suggestions, queue and cost."""
    limited = apply_limits(request)
    asked = limited.request
    scaled, scale_notes = _scaled(platform, asked)
    warnings = [*limited.notes, *scale_notes]
    needs = _needs(asked)
    if asked.queue is not None:
        queue, errors, suggestions = _named(platform, needs, asked.queue)
    else:
        candidates = [q for q in platform.queues if q.auto or q.name == platform.default_queue]
        fitting = [q for q in candidates if not _too_big(q, needs)]
        queue, errors, suggestions = None, [], []
        if not fitting:
            errors, suggestions = _nothing_fits(platform, needs, candidates)
        else:
            order = {q.name: i for i, q in enumerate(platform.queues)}
            scaled_needs = _needs(scaled)

            def rank(q: Queue) -> tuple[bool, float, bool, int]:
                capped = _effective(q, scaled)[0]
                return (bool(_too_big(q, scaled_needs)), _hourly(q, capped),
                        q.name != platform.default_queue, order[q.name])  # fmt: skip

            queue = min(fitting, key=rank)
            others = ", ".join(q.name for q in fitting if q is not queue)
            cheapest = min(rank(q)[1] for q in fitting)
            why = "" if rank(queue)[1] <= cheapest else " without capping the multiplied values"
            if others:
                suggestions.append(
                    f"queue {queue.name} is the cheapest that fits{why} (also fit: {others})"
                )
    if errors or queue is None:
        return ValidationReport(
            tuple(errors), tuple(warnings), tuple(dict.fromkeys(suggestions)), None, scaled
        )
    effective, cap_notes = _effective(queue, scaled)
    warnings += [f"{note} after the platform multiplier" for note in cap_notes]
    warnings += _crowding(queue, effective)
    hourly = _hourly(queue, effective)
    total = None if effective.time is None else hourly * effective.time / 3600
    return ValidationReport(
        tuple(errors), tuple(warnings), tuple(dict.fromkeys(suggestions)), queue.name,
        effective, hourly, total,
    )  # fmt: skip
