"""Each engine task's last attempt and last failure: what the session's next attempt needs.

:class:`~seqera_core.session.Session` keeps one :class:`Attempts` per run. An engine
names each task with a key that stays the same over its attempts (the ``task_id`` it
records them under); after a failed attempt the next one gets what
:mod:`seqera_core.retries` says it needs, and a task that succeeds is forgotten.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import attrs
from attrs import frozen

from .backends.base import JobState, JobStatus
from .models import ResourceRequest
from .pipeline import Prepared, prepare
from .platforms import Platform
from .resolvers import Resolver
from .retries import Failure, rescued

__all__ = ["Attempts", "Finished"]


@frozen
class Finished:
    """A finished attempt to record: what was submitted and how it ended.

    ``task_id`` is the engine's own id for the task (default: the backend's job id);
    ``run_id`` the engine's run when it is not the session's (the sidecar serves many).
    """

    request: ResourceRequest
    status: JobStatus
    task_id: str = ""
    run_id: str = ""


class Attempts:
    """Per engine task key: its last prepared attempt, and its last failure (what the
    next attempt needs, see :mod:`seqera_core.retries`); both dropped when the task
    succeeds."""

    def __init__(self) -> None:
        self._attempts: dict[str, Prepared] = {}
        self._failures: dict[str, Failure] = {}

    def prepare(
        self,
        request: ResourceRequest,
        task: str | None,
        *,
        platform: Platform | None,
        resolvers: Sequence[Resolver],
        run_labels: Mapping[str, str],
    ) -> Prepared:
        """``request`` prepared (:func:`seqera_core.pipeline.prepare`) as the next
        attempt of ``task``: after a failure, with what that failure says it needs."""
        failure = self._failures.get(task) if task is not None else None
        if failure is not None and request.attempt <= failure.given.attempt:
            # A rescue goes out under the engine's same attempt: the history keeps one row
            # per (run, task, attempt), so this one is the next attempt.
            request = attrs.evolve(request, attempt=failure.given.attempt + 1)
        prepared = prepare(
            request,
            platform=platform,
            resolvers=resolvers,
            run_labels=run_labels,
            floor=failure.floor() if failure is not None else None,
        )
        if failure is not None and (note := failure.note()) is not None:
            prepared = attrs.evolve(prepared, notes=(*prepared.notes, f"retry after {note}"))
        if task is not None:
            self._attempts[task] = prepared
        return prepared

    def rescue(self, task: str) -> bool:
        """Whether the task's last attempt, which failed, was failed by the optimiser;
        True once per task (see :meth:`seqera_core.session.Session.rescue`)."""
        failure = self._failures.get(task)
        if failure is None or not rescued(failure):
            return False
        self._failures[task] = attrs.evolve(failure, rescued=True)
        return True

    def remember(self, finished: Iterable[Finished]) -> None:
        """What the next attempt of each failed task needs; a success forgets the task."""
        for item in finished:
            prepared = self._attempts.get(item.task_id) if item.task_id else None
            if prepared is None:
                continue
            if item.status.state is JobState.SUCCEEDED:
                del self._attempts[item.task_id]
                self._failures.pop(item.task_id, None)
                continue
            earlier = self._failures.get(item.task_id)
            self._failures[item.task_id] = Failure(
                prepared.declared,
                item.request,
                item.status,
                rescued=earlier is not None and earlier.rescued,
            )
