"""An online model of one quantity (peak memory, run time) of one process against its input.

The estimate for an input is the largest use among the ``neighbours`` runs of the last
``window`` whose input sizes are nearest (a local upper quantile: it follows a rising
trend and a plateau alike); learning and predicting cost O(log window + k). Before a
run is learned, the model records how far off its own prediction would have been
(``usage / prediction``); the safety factor it applies to an input is the largest of
those ratios among the ``margin_neighbours`` runs nearest to it, plus ``slack``, so a
process, or a range of inputs, that the input explains well gets a small margin and an
erratic one a large margin. It says "I do not know" (``None``) with too few runs or
errors, or for an input larger than any it has seen.
"""

from __future__ import annotations

import bisect
from collections import deque

__all__ = ["UsageModel"]


class UsageModel:
    """Learns ``usage`` against ``input_bytes`` online; predicts with a self-chosen margin."""

    def __init__(
        self,
        *,
        window: int = 256,
        neighbours: int = 8,
        margin_neighbours: int = 64,
        errors: int = 256,
        min_runs: int = 10,
        slack: float = 0.01,
    ) -> None:
        self.window = window
        self.neighbours = neighbours
        self.margin_neighbours = margin_neighbours
        self.min_runs = min_runs
        self.slack = slack
        self.runs = 0
        self.largest = 0.0  # over every run ever learned, not only the window
        self._order = 0
        self._points: deque[tuple[float | None, int, float]] = deque()
        # The window's sized runs by input, and beside them (same index) their usage and
        # error ratio (0 when not scored): max() over a slice of these is the hot path.
        self._sorted: list[tuple[float, int, float]] = []
        self._usages: list[float] = []
        self._errors: list[float] = []
        self._sum = 0.0
        self.errors = errors
        self._ratios: deque[float] = deque(maxlen=errors)
        self._failed: deque[float] = deque(maxlen=16)
        self._largest_input = 0.0

    def _window(self, input_bytes: float, count: int) -> tuple[int, int]:
        """[lo, hi) of the ``count`` sized runs nearest in input; a tie goes to the smaller."""
        ranked = self._sorted
        count = min(count, len(ranked))
        right = bisect.bisect_left(ranked, (input_bytes, -1))
        lo, hi = max(0, right - count), min(right, len(ranked) - count)
        while lo < hi:  # slide the window towards the input while its far end is nearer
            middle = (lo + hi) // 2
            if input_bytes - ranked[middle][0] > ranked[middle + count][0] - input_bytes:
                lo = middle + 1
            else:
                hi = middle
        return lo, lo + count

    def _estimate(self, input_bytes: float) -> float:
        lo, hi = self._window(input_bytes, self.neighbours)
        return max(self._usages[lo:hi])

    def _worst(self, input_bytes: float) -> float | None:
        lo, hi = self._window(input_bytes, self.margin_neighbours)
        return max(self._errors[lo:hi]) or None  # 0: no scored run among them

    def point(self, input_bytes: float | None) -> float | None:
        """The model's central estimate (no margin), or ``None`` before any run."""
        if not self._points:
            return None
        if input_bytes is None or not self._sorted:
            return self._sum / len(self._points)
        # The largest use among the runs with the nearest inputs: a local upper quantile,
        # which follows a rising trend and a plateau alike.
        return self._estimate(input_bytes)

    def learn(
        self, input_bytes: float | None, usage: float, *, score: bool = True, keep: bool = True
    ) -> None:
        """Learn one successful run: first score the prediction it would have had.

        A bulk load that knows what comes next passes ``score=False`` for a run whose error
        ``errors`` later sized runs push out anyway, and ``keep=False`` for one that leaves
        the window before any kept error is scored: only the counts and maxima take it.
        """
        if not keep:
            self.runs += 1
            self._order += 1
            self.largest = max(self.largest, usage)
            if input_bytes is not None:
                self._largest_input = max(self._largest_input, input_bytes)
            return
        ratio = None
        if score and self.runs >= self.min_runs and input_bytes is not None:
            estimate = self.point(input_bytes)
            if estimate:
                ratio = usage / estimate
                self._ratios.append(ratio)
        self.runs += 1
        self._order += 1
        self.largest = max(self.largest, usage)
        self._points.append((input_bytes, self._order, usage))
        self._sum += usage
        if input_bytes is not None:
            self._largest_input = max(self._largest_input, input_bytes)
            entry = (input_bytes, self._order, usage)
            index = bisect.bisect_left(self._sorted, entry)
            self._sorted.insert(index, entry)
            self._usages.insert(index, usage)
            self._errors.insert(index, ratio or 0.0)
        if len(self._points) > self.window:
            old_x, order, old_y = self._points.popleft()
            self._sum -= old_y
            if old_x is not None:
                index = bisect.bisect_left(self._sorted, (old_x, order))
                del self._sorted[index], self._usages[index], self._errors[index]

    def fail(self, allocation: float) -> None:
        """Record an attempt killed at ``allocation``: a lower bound, never a peak."""
        self._failed.append(allocation)

    @property
    def failed(self) -> float:
        """The largest allocation recent attempts were killed at (0 without any)."""
        return max(self._failed, default=0.0)

    def margin(self, input_bytes: float | None = None) -> float | None:
        """The safety factor from the errors near ``input_bytes`` (all recent errors
        without one), or ``None`` with too few errors."""
        if len(self._ratios) < self.min_runs:
            return None
        worst = None
        if input_bytes is not None and self._sorted:
            worst = self._worst(input_bytes)
        # A plateau and a steep rise of the same process deserve different margins.
        return (max(self._ratios) if worst is None else worst) * (1 + self.slack)

    def predict(self, input_bytes: float | None) -> float | None:
        """Estimate x margin, or ``None`` when the model does not know."""
        if self.runs < self.min_runs:
            return None
        # Without an input size, or beyond the largest seen, its errors say nothing.
        if input_bytes is None or input_bytes > self._largest_input * 1.05:
            return None
        if len(self._ratios) < self.min_runs or not self._sorted:
            return None
        estimate, worst = self._estimate(input_bytes), self._worst(input_bytes)
        if not estimate:
            return None
        return estimate * (max(self._ratios) if worst is None else worst) * (1 + self.slack)
