"""One process's window of runs, and the candidates fitted to it (:mod:`._fit`): the bound
for a first attempt at an input size, inside, above and below the inputs seen."""

from __future__ import annotations

import math
from collections import deque
from typing import NamedTuple

from ._fit import Candidate, Settings, fit_candidates
from ._margin import tail_scale

__all__ = ["Fit", "Run", "log_input", "run"]

# An input this far outside the sizes seen is not trusted to the candidate alone.
_OUTSIDE = math.log(1.05)


class Run(NamedTuple):
    """One successful run as a window keeps it (:func:`run` makes one)."""

    input_bytes: int | None
    usage: float
    value: float  # log of the use
    weight: float
    allocation: float | None
    first: bool  # a first attempt (the guard reads no retry as evidence)
    key: float | None  # log_input of a run with an input size: once, not at every fit


def log_input(input_bytes: int) -> float:
    """The log input size candidates are fitted against."""
    return math.log(max(input_bytes, 1))


def run(
    input_bytes: int | None, usage: float, weight: float, allocation: float | None, attempt: int
) -> Run:
    """The window's record of a run that used ``usage`` (> 0)."""
    key = log_input(input_bytes) if input_bytes else None
    return Run(input_bytes, usage, math.log(usage), weight, allocation, attempt <= 1, key)


def _best(candidates: list[Candidate], *kinds: str) -> Candidate:
    return next(c for c in candidates if c.kind in kinds and c.local is None)


class Fit:
    """The candidates of one window: over its runs with an input size, and over all."""

    __slots__ = ("best_all", "best_sized", "high", "low", "neighbours", "quantile", "spread",
                 "tail")  # fmt: skip

    def __init__(self, runs: deque[Run], settings: Settings) -> None:
        values = [r.value for r in runs]
        mean = sum(values) / len(values)
        self.spread = math.sqrt(sum([(v - mean) ** 2 for v in values]) / len(values))
        # how far past a high use the next higher one lands: the scale of the uses' own
        # upper tail (runs far below the top, a tiny input, play no part in it)
        self.tail = tail_scale(sorted(values))
        sized = sorted([(r.key, r.value, r.weight) for r in runs if r.key is not None])
        self.best_sized: Candidate | None = None
        self.neighbours: Candidate | None = None
        self.low = self.high = 0.0
        if len(sized) >= 6:
            keys = [k for k, _, _ in sized]
            candidates = fit_candidates(
                keys, [v for _, v, _ in sized], [w for _, _, w in sized], settings
            )
            self.best_sized = candidates[0]
            self.low, self.high = keys[0], keys[-1]
            self.quantile = _best(candidates, "quantile")
            self.neighbours = next((c for c in candidates if c.kind == "median"
                                    and c.local is None), None)  # fmt: skip
        if len(sized) < len(runs) or self.best_sized is None:
            candidates = fit_candidates(None, values, [r.weight for r in runs], settings)
            self.quantile = _best(candidates, "quantile")
        # A request without an input size: the best of the candidates that need none.
        self.best_all = _best(candidates, "quantile", "mean")

    def beyond(self, input_bytes: int | None) -> bool:
        """Whether this input is past the sizes seen (a candidate extrapolates there)."""
        if input_bytes is None or self.best_sized is None:
            return False
        return log_input(input_bytes) > self.high + _OUTSIDE

    def upper(self, input_bytes: int | None) -> float:
        """The calibrated log allocation for a first attempt."""
        best = self.best_sized
        if input_bytes is None or best is None:
            return self.best_all.upper(None)
        key = log_input(input_bytes)
        # Where the per-process maximum (calibrated) is less, it is the better bound.
        bound = min(best.upper(key), self.quantile.upper(None))
        if key > self.high + _OUTSIDE:
            # never below the largest use seen (what the plain maximum gives); the
            # calibrated maximum's margin is priced for the inputs seen, not past them
            bound = max(bound, self.quantile.intercept + self.quantile.resolution)
        elif key < self.low - _OUTSIDE and self.neighbours is not None:
            bound = max(bound, self.neighbours.upper(key))
        return bound
