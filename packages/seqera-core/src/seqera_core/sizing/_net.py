"""A safety net per process: the plain per-process maximum, where the model has done worse.

For each finished task of a process, what both would have cost is known from the task
itself: the model's own first allocation (what it would have answered before learning the
task) and the plain maximum's (the largest peak the process had shown, as
:class:`~seqera_core.resolvers.MaximumResolver` gives with no margin). An allocation at or
above the peak wastes the difference x the task's weight (its run time); one below it
wastes all of it and is retried (at the model's retry; the maximum's: twice what failed)
until it holds the peak, as an evaluation counts them (``seqera-sidecar evaluate``).
Over the process's last ``span`` scored tasks, the process is sized by the maximum once
the model has wasted clearly more (``_BEHIND``) while the maximum retried no more often
(one task in a hundred of the span aside), and by the model again once it wastes no more
(or the maximum retries more). The model keeps learning meanwhile and is scored as if it
had answered. So a process is never much worse off than with the baseline a user could
have written, on a pipeline the model was not tuned on, and the net never buys waste
with retries: the model's calibrated miss rate is what keeps those rare.

It is a net for gross failures (issue 31's pipeline C: 330 GB-h where the maximum wasted
17), not a second optimiser: a few per cent either way over a few dozen tasks is luck.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

__all__ = ["Net", "cost"]

# Twenty tasks before judging: a few early misses are no verdict on either.
_LEAST = 20
_SPAN = 200
# Behind once the model wastes this much more than the maximum: a little luck either way
# is no verdict.
_BEHIND = 1.25
# The maximum may retry this share of the span's tasks more often than the model did.
_RETRIES = 0.01
# A retry that never holds the peak is a bug, not a cost: stop escalating there.
_ATTEMPTS = 20


def cost(
    first: float, peak: float, weight: float, retry: Callable[[float], float]
) -> tuple[float, int]:
    """(waste, retries) of a task that peaked at ``peak`` given ``first``: what is left
    over x weight, each miss's whole allocation x weight, retried at ``retry(failed)``
    (never less than 5 % more)."""
    waste, given = 0.0, first
    for retries in range(_ATTEMPTS):
        if given >= peak:
            return waste + (given - peak) * weight, retries
        waste += given * weight
        given = max(retry(given), given * 1.05)
    return waste, _ATTEMPTS


class Net:
    """The model's and the maximum's waste and retries over a process's last tasks."""

    __slots__ = ("_tasks", "behind", "least")

    def __init__(self, span: int = _SPAN, least: int = _LEAST) -> None:
        self._tasks: deque[tuple[float, int, float, int]] = deque(maxlen=span)
        self.least = least
        self.behind = False  # sized by the maximum now

    def score(self, model: tuple[float, int], maximum: tuple[float, int]) -> None:
        """One finished task: the (waste, retries) of the model's and the maximum's answers."""
        self._tasks.append((*model, *maximum))
        n = len(self._tasks)
        if n < self.least:
            return
        ours = sum(t[0] for t in self._tasks)
        theirs = sum(t[2] for t in self._tasks)
        retries = sum(t[3] - t[1] for t in self._tasks) <= _RETRIES * n
        self.behind = retries and ours > (1 if self.behind else _BEHIND) * theirs
