"""How the right-sizer retries a task killed for memory (or time): kills it remembers, and
the allocation a retry after a kill at ``failed`` gets.

The smallest of: the chosen candidate at the least miss rate (its error distribution's far
tail), the calibrated maximum, the largest use seen, that exceeds ``failed`` by 5 % or
more and by what the model's errors say a miss overshoots (the scale of their upper tail
x ln(1/``alpha``): a second miss at most ``alpha`` of the time), and never more than
``escalation`` x the larger of ``failed`` and the largest use; past all of them (a use
never seen), the failed allocation grown by the process's own spread (at least 10 %;
``escalation`` before any run). A miss thus escalates from how wrong the model has been,
not by a constant factor of the allocation that failed.
"""

from __future__ import annotations

import math
from collections import deque

from ._prior import Moments, Pool
from ._window import Fit, Run, log_input

__all__ = ["KEPT_FAILURES", "Retries"]

# Kills remembered per model: the latest are the ones a retry asks about.
KEPT_FAILURES = 64

# A retry's allocation exceeds the one that failed by at least this much, and growing
# past everything seen by at least the second.
_RETRY_STEP = 1.05
_MIN_GROWTH = 1.1
# The share of a pipeline's record gaps a retry past every use seen covers.
_RECORDS = 0.9


class Retries:
    """The kills of one :class:`~seqera_core.sizing.UsageModel` and its retries' sizes (a
    part of it: the attributes below are the model's)."""

    alpha: float
    escalation: float
    resolution: float
    largest: float
    pool: Pool | None
    _moments: Moments
    _window: deque[Run]
    _failed: deque[tuple[int | None, float]]

    def _fitted(self) -> Fit | None:
        raise NotImplementedError

    def _few(self) -> float:
        raise NotImplementedError

    def fail(self, input_bytes: int | None, allocation: float) -> None:
        """Record an attempt killed at ``allocation``: a lower bound, never a use."""
        self._failed.append((input_bytes, allocation))

    def failed_at(self, input_bytes: int | None) -> float:
        """The allocation a task of this input was last killed at (0 if none was).

        The input size stands for the task: its retries read the same files. A kill
        recorded without a size counts for any task, as does any kill for a task without
        one.
        """
        for x, given in reversed(self._failed):
            if input_bytes is None or x is None or x == input_bytes:
                return given
        return 0.0

    def _kills(self, input_bytes: int) -> int:
        """How many kills of a task of this input size are remembered."""
        return sum(1 for x, _ in self._failed if x == input_bytes)

    def _record(self, fit: Fit) -> float:
        """How far past the largest use a new record lands (log), as far as this process
        and its pipeline have shown: its uses' own upper tail (exponential: its scale x
        ln(1/alpha)), its own gap between its two largest uses, and the gap that 9 in 10
        of its pipeline's processes' records stayed within (one wild process's jump is no
        measure of the others')."""
        gaps = () if self.pool is None else self.pool.lent(self._moments)[1]
        lent = gaps[min(len(gaps) - 1, int(_RECORDS * len(gaps)))] if gaps else 0.0
        return max(self.resolution, self._moments.gap, lent, fit.tail * -math.log(self.alpha))

    def retry(self, input_bytes: int | None, failed: float) -> float:
        """The allocation for a retry after a kill at ``failed`` (the module's rules)."""
        fit = self._fitted()
        least = failed * _RETRY_STEP
        # Only kills so far (no run has finished): no use to bound from, only the step.
        rungs = [self._few()] if fit is None and self._window else []
        spread = 0.0
        if fit is not None:
            best = fit.best_sized if input_bytes is not None and fit.best_sized else fit.best_all
            key = None if input_bytes is None else log_input(input_bytes)
            rungs += [
                math.exp(best.upper(key, safe=True)),
                math.exp(fit.quantile.upper(None)),
                self.largest,
            ]
            spread = fit.spread
            # The kill says this run's error passed the margin the failed allocation stood
            # for. Past a margin, the model's errors run on by its tail's scale (an
            # exponential tail forgets where it was passed): the allocation a second miss
            # passes at most ``alpha`` of the time is that scale x ln(1/alpha) higher.
            least = max(least, failed * math.exp(best.overshoot(key) * -math.log(self.alpha)))
            if failed >= self.largest:
                # Killed at or past every use seen: this run is a new record, whatever the
                # allocation stood for (the net's maximum, say), and a record passes the
                # one before by a record's gap, not by the model's errors.
                least = failed * max(_MIN_GROWTH, math.exp(self._record(fit)))
                rungs.append(least)
        # Never past ``escalation`` x what is known: a tail fitted to few errors can
        # promise any size.
        most = max(failed, self.largest) * self.escalation
        if input_bytes is not None and self._kills(input_bytes) > 1:
            # Killed again: this task is past what the model's errors and records said a
            # miss overshoots, so they are no guide to it; escalate as an engine does.
            least = max(least, failed * self.escalation)
        above = [rung for rung in rungs if rung >= least]
        if above:
            return min(min(above), most)
        # Nothing learned yet: no spread to go by, so the full step.
        growth = self.escalation if fit is None else (
            min(self.escalation, max(_MIN_GROWTH, math.exp(2 * spread))))  # fmt: skip
        return max(min(least, most), max(failed, self.largest) * growth)
