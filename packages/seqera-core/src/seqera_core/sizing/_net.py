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
(one task in a hundred of the span aside) and is not expected to miss more often than
the model: it misses a new record 1 time in ``runs + 1``, so a process of fewer than
``1 / alpha`` runs (a young one, or a pipeline with little history) keeps the model,
however few records its span happened to hold; it goes back to the model once that
wastes no more (or the maximum retries more). The model keeps learning meanwhile and is
scored as if it had answered. So a process is never much worse off than with the
baseline a user could have written, on a pipeline the model was not tuned on, and the
net never buys waste with retries: the model's calibrated miss rate is what keeps those
rare.

It is a net for gross failures (issue 31's pipeline C: 330 GB-h where the maximum wasted
17), not a second optimiser: a few per cent either way over a few dozen tasks is luck.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable

from ._prior import Moments
from ._window import Fit, Run

__all__ = ["Net", "Netted", "cost"]

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
# Answers kept for the net until their tasks finish.
_ANSWERS = 4096
# A window's last runs the net scores before the first answer: enough to judge on, at a
# few refits (a sixteenth of the window each), so a process's first answer costs what
# its window holds, not its history.
_REHEARSED = 64
# The rehearsal refits once its window has grown by this share and this many runs since
# its last fit (a live model refits after a sixteenth): a few more runs barely move a
# fit, and the fits are what a process's first answer costs.
_REFIT = 0.25
_REFIT_RUNS = 16
_LEARNT = 10


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

    __slots__ = ("_tasks", "alpha", "behind", "least")

    def __init__(self, alpha: float, span: int = _SPAN, least: int = _LEAST) -> None:
        """``alpha``: the miss rate the model is calibrated to (see :meth:`score`)."""
        self.alpha = alpha
        self._tasks: deque[tuple[float, int, float, int]] = deque(maxlen=span)
        self.least = least
        self.behind = False  # sized by the maximum now

    def score(self, model: tuple[float, int], maximum: tuple[float, int], runs: int) -> None:
        """One finished task: the (waste, retries) of the model's and the maximum's
        answers, and the runs the process has had (what the maximum stands on now)."""
        self._tasks.append((*model, *maximum))
        n = len(self._tasks)
        if n < self.least:
            return
        ours = sum(t[0] for t in self._tasks)
        theirs = sum(t[2] for t in self._tasks)
        mine = sum(t[1] for t in self._tasks)
        # The maximum misses the next run 1 time in runs + 1 (a new record; the rank
        # argument): no process goes to it while that is more often than the model is
        # calibrated to miss, or has missed over the span (1 task in 100 aside),
        # however few records its span happened to hold.
        ahead = 1 / (runs + 1) > max(self.alpha, mine / n + _RETRIES)
        retries = not ahead and sum(t[3] for t in self._tasks) - mine <= _RETRIES * n
        self.behind = retries and ours > (1 if self.behind else _BEHIND) * theirs


class Netted:
    """What one :class:`~seqera_core.sizing.UsageModel` answered, scored for its net, and
    the rehearsal of its window before its first answer (a part of it: the attributes
    below are the model's)."""

    net: Net | None
    largest: float
    floor: float
    runs: int
    _answers: dict[int | None, float]
    _window: deque[Run]
    _moments: Moments
    _fit: Fit | None
    _stale: int
    _tracks: tuple[float | None] | None
    _rehearsed: bool

    def own(self, input_bytes: int | None) -> float | None:
        raise NotImplementedError

    # (``retry`` is :class:`~seqera_core.sizing._retry.Retries`, ahead of this in the MRO)
    def retry(self, input_bytes: int | None, failed: float) -> float:
        raise NotImplementedError

    def answered(self, input_bytes: int | None, size: float) -> None:
        """Note what the model (not the net) answered, as the caller gave it (capped,
        floored), for a first attempt of a task of this input size: the net scores that."""
        if self.net is None:
            return
        self._answers.pop(input_bytes, None)
        self._answers[input_bytes] = size
        if len(self._answers) > _ANSWERS:  # tasks that never finished: forget the oldest
            del self._answers[next(iter(self._answers))]

    def _score(
        self, input_bytes: int | None, usage: float, weight: float, own: float | None = None
    ) -> None:
        """Score the model (``own``, or what it answered for this input) and the plain
        maximum on a finished run, before learning it."""
        assert self.net is not None
        if own is None:
            own = self._answers.pop(input_bytes, None)
        if own is None:  # a task it was not asked about (read from the history, say)
            return
        largest, floor = max(self.largest, self.floor), self.floor
        self.net.score(
            cost(max(own, floor), usage, weight,
                 lambda failed: max(self.retry(input_bytes, failed), floor)),
            cost(largest, usage, weight, lambda failed: max(largest, 2 * failed)),
            self.runs,
        )  # fmt: skip

    def _rehearse(self) -> None:
        """Score the window's last ``_REHEARSED`` runs for the net, once, before the first
        answer: what the model would have answered from the runs before each (refitted
        once they grew by a quarter and 16 runs), against the largest use before it. So
        the net judges from the first task it sizes, on the process's own finished runs,
        not only on what it answered since, and the same whether the window came from the
        history's index or from learning every row.

        The window is refilled in order as it goes (the same runs, the same state); the
        largest use before it is the largest of the all-time two (the summary's) that no
        run of it accounts for, and when both are in it the window's own runs stand in
        for it (the maximum then looks, if anything, leaner)."""
        self._rehearsed = True
        runs = list(self._window)
        if self.net is None or len(runs) < 2:
            return
        largest, stale = self.largest, self._stale
        seen = self._before([r.usage for r in runs])
        # Only answers from ``_LEARNT`` runs or more: the first few (a fallback margin on a
        # handful, a maximum missed by every early record) say nothing of how either
        # does on a process it has learned.
        before = self.runs - len(runs)
        start = max(1, len(runs) - _REHEARSED, _LEARNT - before)
        self._window.clear()
        fitted = start  # the window's length at the rehearsal's last fit
        try:
            for i, run in enumerate(runs):
                if i >= start and seen > 0:
                    self.largest = seen  # what the model and the maximum knew then
                    if i == start or i >= fitted + max(_REFIT_RUNS, fitted * _REFIT):
                        self._fit, fitted = None, i
                    self._stale = 0  # refitted on the schedule above, not the live one
                    own = self.own(run.input_bytes)
                    if own is not None:
                        self._score(run.input_bytes, run.usage, run.weight, own)
                self._window.append(run)
                self._stale += 1
                seen = max(seen, run.usage)
        finally:
            self.largest, self._stale = largest, stale
            self._fit, self._tracks = None, None  # fitted on part of it: fit the whole

    def _before(self, usages: list[float]) -> float:
        """The largest use before a window of ``usages`` (0 when unknown: see
        :meth:`recall_window`)."""
        if self.runs <= len(usages):
            return 0.0
        inside = sorted((math.log(u) for u in usages), reverse=True)
        for value in (self._moments.top, self._moments.second):
            if math.isinf(value):
                return 0.0
            if inside and inside[0] == value:  # this one is in the window
                inside.pop(0)
                continue
            # the all-time largest is kept exactly; the next only as its log
            return self.largest if value == self._moments.top else math.exp(value)
        return 0.0
