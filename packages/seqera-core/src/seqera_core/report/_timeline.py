"""Every attempt on one time line: when it ran, where, and how it ended.

As Nextflow's ``-with-timeline`` draws each task from submission to completion, the report
draws each attempt from its start to its end, coloured by outcome. The history keeps when
an attempt ended (``finished``) and its run time, so an attempt ran from ``finished -
realtime`` to ``finished``; where the backend does not say when a job started (Slurm,
ECS), ``finished`` is when the engine saw it end, at most one poll late. An attempt
without a run time (a Slurm without accounting) cannot be placed, and is counted apart.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from ..history import TaskRecord
from ._figures import label
from ._records import cause

__all__ = ["Span", "spans"]


@frozen
class Span:
    """One attempt on the time line (epoch seconds)."""

    run_id: str
    task: str  # the task's label: its id, its run when several, its attempt after the first
    process: str
    attempt: int
    backend: str
    start: float
    end: float
    outcome: str  # "succeeded", else the failure's cause (out_of_memory, time_limit, ...)


def spans(records: Sequence[TaskRecord], runs: int = 1) -> tuple[Span, ...]:
    """The attempts that can be placed in time, earliest start first."""
    placed = [
        Span(
            run_id=r.run_id,
            task=label(r, runs),
            process=r.process,
            attempt=r.attempt,
            backend=r.backend,
            start=r.finished - r.realtime,
            end=r.finished,
            outcome=cause(r) or "succeeded",
        )
        for r in records
        if r.finished is not None and r.realtime is not None
    ]
    return tuple(sorted(placed, key=lambda s: (s.start, s.end, s.task)))
