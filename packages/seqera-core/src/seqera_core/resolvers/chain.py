"""Running resolvers: the first answer wins, any failure falls back to the declared values."""

from __future__ import annotations

import concurrent.futures
import logging
import math
from collections.abc import Sequence

from attrs import frozen

from ..limits import cap
from ..models import ResourceLimits, ResourceRequest, ResourceResponse
from .base import Resolver

__all__ = ["Resolution", "resolve"]

_LOG = logging.getLogger("seqera_core.resolvers")
# One small shared pool: a hung resolver holds one thread until it returns, never the caller.
_POOL = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="seqera-resolver")


@frozen
class Resolution:
    """Declared values (kept for hashing and caching), effective values, and who decided."""

    declared: ResourceRequest
    effective: ResourceResponse
    resolver: str
    notes: tuple[str, ...] = ()


def _task(request: ResourceRequest) -> str:
    name = request.process or "task"
    index = "" if request.task_index is None else f" #{request.task_index}"
    return f"{name}{index} (attempt {request.attempt})"


def _valid(answer: object) -> bool:
    if not isinstance(answer, ResourceResponse):
        return False
    return all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) and v > 0
        for v in (answer.cpus, answer.memory, answer.disk, answer.time)
    )


def _declared(request: ResourceRequest, defaults: ResourceResponse) -> ResourceResponse:
    return ResourceResponse(
        cpus=request.cpus if request.cpus is not None else defaults.cpus,
        memory=request.memory if request.memory is not None else defaults.memory,
        disk=request.disk if request.disk is not None else defaults.disk,
        time=request.time if request.time is not None else defaults.time,
    )


def resolve(
    request: ResourceRequest,
    resolvers: Sequence[Resolver],
    *,
    defaults: ResourceResponse,
    timeout: float = 5.0,
    caps: ResourceLimits | None = None,
) -> Resolution:
    """Ask ``resolvers`` (lowest priority first) for ``request``'s effective resources.

    The first valid answer wins. An exception, a timeout or a malformed answer logs one
    warning naming the resolver and the task and moves on; the declared values (missing
    ones from ``defaults``) are the final fallback. The result is capped by the request's
    ``resource_limits`` and then by ``caps`` (a queue's limits).
    """
    effective, source = _declared(request, defaults), "declared"
    for resolver in sorted(resolvers, key=lambda r: r.priority):
        name = getattr(resolver, "name", type(resolver).__name__)
        future = _POOL.submit(resolver.resolve, request)
        try:
            answer = future.result(timeout=timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            _LOG.warning("resolver %s timed out after %s s for %s; "
                         "using the declared values", name, timeout, _task(request))  # fmt: skip
            break
        except Exception as exc:
            _LOG.warning("resolver %s failed for %s (%s: %s); using the declared values",
                         name, _task(request), type(exc).__name__, exc)  # fmt: skip
            break
        if answer is None:
            continue
        if not _valid(answer):
            _LOG.warning("resolver %s gave a malformed answer for %s (%r); "
                         "using the declared values", name, _task(request), answer)  # fmt: skip
            break
        effective, source = answer, name
        break
    effective, notes = cap(effective, request.resource_limits, "resource limit")
    effective, queue_notes = cap(effective, caps, "queue limit")
    return Resolution(request, effective, source, notes + queue_notes)
