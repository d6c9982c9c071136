"""Running resolvers: the first answer wins, any failure falls back to the declared values."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence

import attrs
from attrs import frozen

from ..bounds import MAXIMA
from ..models import ResourceLimits, ResourceRequest, ResourceResponse
from ..platforms import cap
from .base import DefaultResolver, Resolver

__all__ = ["Resolution", "resolve"]

_LOG = logging.getLogger("seqera_core.resolvers")

# Threads of calls that timed out, by id(resolver). A hung resolver is skipped until its
# abandoned call ends, so it holds at most one thread instead of one per task. The thread
# keeps its resolver alive, so the id cannot be reused while the entry matters.
_ABANDONED: dict[int, threading.Thread] = {}
_ABANDONED_LOCK = threading.Lock()


@frozen
class Resolution:
    """Declared values (kept for hashing and caching), effective values, and who decided."""

    declared: ResourceRequest
    effective: ResourceResponse
    resolver: str
    notes: tuple[str, ...] = ()


class _Fallback(Exception):
    """Why a resolver's answer cannot be used; the message completes "resolver X ..."."""


def _task(request: ResourceRequest) -> str:
    name = request.process or "task"
    index = "" if request.task_index is None else f" #{request.task_index}"
    return f"{name}{index} (attempt {request.attempt})"


def _name(resolver: Resolver) -> str:
    name = getattr(resolver, "name", None)
    return name if isinstance(name, str) and name else type(resolver).__name__


def _declared(request: ResourceRequest, defaults: ResourceResponse) -> ResourceResponse:
    return ResourceResponse(
        cpus=request.cpus if request.cpus is not None else defaults.cpus,
        memory=request.memory if request.memory is not None else defaults.memory,
        disk=request.disk if request.disk is not None else defaults.disk,
        time=request.time if request.time is not None else defaults.time,
    )


def _ask(resolver: Resolver, request: ResourceRequest, timeout: float) -> object:
    """The resolver's raw answer, from a daemon thread given ``timeout`` seconds (called
    directly for an ``inline`` resolver)."""
    if resolver.inline:
        try:
            return resolver.resolve(request)
        except Exception as exc:
            raise _Fallback(f"failed ({type(exc).__name__}: {exc})") from None
    key = id(resolver)
    with _ABANDONED_LOCK:
        earlier = _ABANDONED.get(key)
        if earlier is not None and earlier.is_alive():
            raise _Fallback("was skipped (an earlier call timed out and is still running)")
        _ABANDONED.pop(key, None)
    outcome: list[tuple[bool, object]] = []

    def call() -> None:
        try:
            outcome.append((True, resolver.resolve(request)))
        except BaseException as exc:  # even sys.exit(): it would only end this thread
            outcome.append((False, exc))

    # A daemon thread, so that a resolver that never returns cannot keep the process alive.
    thread = threading.Thread(target=call, name=f"seqera-resolver-{_name(resolver)}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        with _ABANDONED_LOCK:
            _ABANDONED[key] = thread
        raise _Fallback(f"timed out after {timeout:g} s")
    if not outcome:
        raise _Fallback("ended without an answer")
    ok, value = outcome[0]
    if not ok:
        raise _Fallback(f"failed ({type(value).__name__}: {value})")
    return value


def _checked(answer: object) -> ResourceResponse | None:
    if answer is None:
        return None
    if not isinstance(answer, ResourceResponse):
        raise _Fallback(f"gave a malformed answer ({type(answer).__name__}, not a response)")
    try:
        # The model's own rules (whole bytes and seconds, values > 0), which an answer
        # built around its constructor has never met.
        attrs.validate(answer)
    except Exception as exc:
        raise _Fallback(f"gave a malformed answer ({exc})") from None
    return answer


def resolve(
    request: ResourceRequest,
    resolvers: Sequence[Resolver],
    *,
    defaults: ResourceResponse,
    timeout: float = 5.0,
    caps: ResourceLimits | None = None,
) -> Resolution:
    """Ask ``resolvers`` (lowest priority first) for ``request``'s effective resources.

    The first answer that is not ``None`` wins. An exception, a timeout or a malformed
    answer logs one warning naming the resolver and the task, and the declared values
    (missing ones from ``defaults``) are used. The result is capped by the contract's
    maxima (:data:`seqera_core.bounds.MAXIMA`: whoever answered, a 309-digit time never
    reaches a scheduler), the request's ``resource_limits`` and then by ``caps`` (a
    queue's limits); each cap is a note.
    """
    effective, source = _declared(request, defaults), "declared"
    notes: tuple[str, ...] = ()
    for resolver in sorted(resolvers, key=lambda r: r.priority):
        if type(resolver) is DefaultResolver:
            continue  # no opinion, known without a thread
        name = _name(resolver)
        try:
            answer = _checked(_ask(resolver, request, timeout))
        except _Fallback as why:
            _LOG.warning("resolver %s %s for %s; using the declared values",
                         name, why, _task(request))  # fmt: skip
            notes = (f"resolver {name} {why}; declared values used",)
            break
        if answer is not None:
            effective, source = answer, name
            break
    effective, bound_notes = cap(effective, MAXIMA, "contract maximum")
    effective, limit_notes = cap(effective, request.resource_limits, "resource limit")
    effective, queue_notes = cap(effective, caps, "queue limit")
    return Resolution(request, effective, source, notes + bound_notes + limit_notes + queue_notes)
