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
from collections.abc import Iterator

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
        # the window's sized points by input: (input, order, usage, error ratio or None)
        self._sorted: list[tuple[float, int, float, float | None]] = []
        self._sum = 0.0
        self.errors = errors
        self._ratios: deque[float] = deque(maxlen=errors)
        self._failed: deque[float] = deque(maxlen=16)
        self._largest_input = 0.0

    def _nearest(self, input_bytes: float, count: int) -> Iterator[tuple[float, float | None]]:
        """(usage, error ratio) of the ``count`` sized runs with the nearest inputs."""
        ranked = self._sorted
        right = bisect.bisect_left(ranked, (input_bytes, -1))
        left = right - 1
        for _ in range(min(count, len(ranked))):
            if right >= len(ranked) or (
                left >= 0 and input_bytes - ranked[left][0] <= ranked[right][0] - input_bytes
            ):
                yield ranked[left][2], ranked[left][3]
                left -= 1
            else:
                yield ranked[right][2], ranked[right][3]
                right += 1

    def point(self, input_bytes: float | None) -> float | None:
        """The model's central estimate (no margin), or ``None`` before any run."""
        if not self._points:
            return None
        if input_bytes is None or not self._sorted:
            return self._sum / len(self._points)
        # The largest use among the runs with the nearest inputs: a local upper quantile,
        # which follows a rising trend and a plateau alike.
        return max(usage for usage, _ in self._nearest(input_bytes, self.neighbours))

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
            bisect.insort(self._sorted, (input_bytes, self._order, usage, ratio))
        if len(self._points) > self.window:
            old_x, order, old_y = self._points.popleft()
            self._sum -= old_y
            if old_x is not None:
                del self._sorted[bisect.bisect_left(self._sorted, (old_x, order))]

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
        if input_bytes is None:
            return max(self._ratios) * (1 + self.slack)
        # A plateau and a steep rise of the same process deserve different margins.
        near = [r for _, r in self._nearest(input_bytes, self.margin_neighbours) if r is not None]
        return max(near or self._ratios) * (1 + self.slack)

    def predict(self, input_bytes: float | None) -> float | None:
        """Estimate x margin, or ``None`` when the model does not know."""
        if self.runs < self.min_runs:
            return None
        # Without an input size, or beyond the largest seen, its errors say nothing.
        if input_bytes is None or input_bytes > self._largest_input * 1.05:
            return None
        estimate, margin = self.point(input_bytes), self.margin(input_bytes)
        if estimate is None or margin is None:
            return None
        return estimate * margin
