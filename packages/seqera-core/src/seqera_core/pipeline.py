"""One task's way from what the engine declared to what a backend receives.

declared request -> resource limits -> platform validation (queue chosen) -> resolver chain
(capped by the request's limits and the queue's) -> effective request + label delta.

A retry's ``floor`` (see :mod:`seqera_core.retries`) raises the declared values before the
limits and the platform see them (so a queue that holds them is chosen, and a resource
limit still caps them, as Nextflow's ``resourceLimits`` caps a retry), and no resolver's
answer goes below it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs
from attrs import frozen

from .labels import task_delta
from .models import ResourceLimits, ResourceRequest, ResourceResponse
from .platforms import Platform, ValidationReport, validate
from .platforms._limits import apply_limits
from .resolvers import Resolution, Resolver, resolve
from .units import GIB

__all__ = ["DEFAULTS", "Prepared", "prepare"]

_VALUES = ("cpus", "memory", "disk", "time")
# What a task gets for a value it did not declare when the platform says nothing either.
DEFAULTS = ResourceResponse(cpus=1, memory=GIB, disk=10 * GIB, time=3600)


@frozen
class Prepared:
    """A task ready to submit: the declared request is kept for hashing and caching."""

    declared: ResourceRequest
    request: ResourceRequest
    resolution: Resolution | None  # None when the platform cannot run the task
    report: ValidationReport | None
    labels: Mapping[str, str]
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the task can be submitted."""
        return self.report is None or not self.report.errors


def _queue_caps(
    platform: Platform | None, report: ValidationReport | None
) -> ResourceLimits | None:
    if platform is None or report is None or report.queue is None:
        return None
    queue = platform.queue(report.queue)
    assert queue is not None
    return ResourceLimits(cpus=queue.max_cpus, memory=queue.max_memory, time=queue.max_walltime)


def prepare(
    request: ResourceRequest,
    *,
    platform: Platform | None = None,
    resolvers: Sequence[Resolver] = (),
    run_labels: Mapping[str, str] | None = None,
    defaults: ResourceResponse = DEFAULTS,
    timeout: float = 5.0,
    floor: Mapping[str, float | int] | None = None,
) -> Prepared:
    """Validate, resolve and label one task. A task the platform can never run comes back
    with the report's errors and no resolution: nothing is asked of the resolvers.
    ``floor`` holds the least values a retry may get (see the module's docstring)."""
    declared, floor = request, dict(floor or {})
    if floor:
        raised: dict[str, Any] = {k: max(v, getattr(request, k) or 0) for k, v in floor.items()}
        request = attrs.evolve(request, **raised)
    capped = apply_limits(request)
    checked, report = capped.request, None
    if platform is not None:
        report = validate(platform, checked)
        if report.errors:
            labels = {**(run_labels or {}), **request.labels}
            return Prepared(declared, report.request, None, report, labels, capped.notes)
        checked = report.request
    resolution = resolve(
        checked, resolvers, defaults=defaults, timeout=timeout, caps=_queue_caps(platform, report)
    )
    effective = {name: getattr(resolution.effective, name) for name in _VALUES}
    # An undeclared value that nobody optimised (the resolver answered the default it was
    # given) stays undeclared: the scheduler's own default applies, not ours (a 10 GiB
    # --tmp the node may not have).
    effective = {
        k: v
        for k, v in effective.items()
        if getattr(checked, k) is not None
        or (resolution.resolver != "declared" and v != getattr(defaults, k))
    }
    for name in floor:  # a retry's floor, as limits and the queue left it, holds
        effective[name] = max(effective.get(name) or 0, getattr(checked, name))
    final = attrs.evolve(checked, **effective, labels=task_delta(run_labels or {}, request.labels))
    return Prepared(
        declared=declared,
        request=final,
        resolution=resolution,
        report=report,
        labels={**(run_labels or {}), **final.labels},
        notes=capped.notes + resolution.notes,
    )
