"""A retry that arrives before its failed attempt: what the per-task config tells the sidecar.

Nextflow submits a retry from ``TaskProcessor.finalizeTask`` before it notifies its
observers (``TaskPollingMonitor.finalizeTask``), so the weblog's ``process_completed``
for the failed attempt can reach the sidecar after the retry's resources were asked for.
The per-task config (:mod:`.pertask`) therefore sends, with an attempt after the first,
what it knows of the one before in the request's ``extra``:

- ``nextflow.exit_status``: ``task.exitStatus`` (137 is read as out of memory and 140 as
  a time-limit kill, as the weblog reads them: :mod:`.weblog`);
- ``nextflow.previous_memory_bytes`` / ``nextflow.previous_time_seconds``: what that
  attempt was given (``task.previousTrace``, or the answer the closure got for it).

The right-sizer learns the kill before it answers (never stored: the weblog's record of
the attempt is the history's).
"""

from __future__ import annotations

from collections.abc import Iterable

from seqera_core.errors import WireError
from seqera_core.history import TaskRecord
from seqera_core.models import ResourceRequest
from seqera_core.resolvers import PredictiveResolver, Resolver

__all__ = ["EXIT", "PREVIOUS_MEMORY", "PREVIOUS_TIME", "failed_attempt", "note_retry"]

EXIT = "nextflow.exit_status"
PREVIOUS_MEMORY = "nextflow.previous_memory_bytes"
PREVIOUS_TIME = "nextflow.previous_time_seconds"
_OOM_EXITS = frozenset({137})
_TIME_EXITS = frozenset({140})
_LARGEST = 2**63 - 1


def _whole(request: ResourceRequest, key: str, low: int) -> int | None:
    text = request.extra.get(key)
    if text is None or text == "":
        return None
    digits = text[1:] if text.startswith("-") else text
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 19):
        raise WireError([f"$.extra.{key}: {text[:40]!r} is not a whole number"])
    value = int(text)
    if not low <= value <= _LARGEST:
        raise WireError([f"$.extra.{key}: {text[:40]!r} is not from {low} to {_LARGEST}"])
    return value


def failed_attempt(request: ResourceRequest) -> TaskRecord | None:
    """The attempt before ``request`` as a killed attempt, when ``extra`` says how it ended
    (``None`` for a first attempt, no exit status, or an exit that is not a kill)."""
    exit_code = _whole(request, EXIT, -_LARGEST - 1)
    memory = _whole(request, PREVIOUS_MEMORY, 1)
    time = _whole(request, PREVIOUS_TIME, 1)
    if request.attempt < 2 or exit_code is None or not request.process:
        return None
    out_of_memory = exit_code in _OOM_EXITS and memory is not None
    time_limit = exit_code in _TIME_EXITS and time is not None
    if not (out_of_memory or time_limit):
        return None
    return TaskRecord(
        run_id="nextflow-closure",
        task_id=request.process,
        process=request.process,
        succeeded=False,
        attempt=request.attempt - 1,
        engine="nextflow",
        exit_code=exit_code,
        out_of_memory=out_of_memory,
        time_limit=time_limit,
        cpus=request.cpus,
        memory=memory,
        time=time,
        input_bytes=request.input_bytes,
        container=request.container,
    )


def note_retry(request: ResourceRequest, resolvers: Iterable[Resolver]) -> None:
    """Tell the right-sizers in ``resolvers`` of the kill ``request`` is a retry of."""
    failed = failed_attempt(request)
    if failed is None:
        return
    for resolver in resolvers:
        if isinstance(resolver, PredictiveResolver):
            resolver.note_failure(failed)
