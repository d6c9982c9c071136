"""The runs nearest in input, and margins that follow how far off a candidate is near them.

:func:`nearest` and :func:`windows` find a key's nearest runs (the ``median`` candidate's
neighbours, a local scale's runs); :class:`Scale` is a local candidate's scale near an input
(normalised conformal prediction); :class:`LocalPricing` prices a local candidate's margins,
where each run's allocation is its own; :func:`passing` is how often a new record passes a
margin (:mod:`seqera_core.sizing._fit` calibrates with all of them).

Their arithmetic is written for speed but does what the plain expressions in their
comments do, operation for operation (a report's and a replay's answers stay the same to
the bit); ``tests/seqera_core/sizing/test_fit.py`` checks it against those expressions.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from itertools import accumulate

from ._margin import MOST

__all__ = ["LocalPricing", "Scale", "nearest", "passing", "windows"]


def nearest(keys: Sequence[float], key: float, count: int) -> tuple[int, int]:
    """``[lo, hi)``: the ``count`` sorted ``keys`` nearest ``key`` (a tie goes to the smaller)."""
    count = min(count, len(keys))
    right = bisect.bisect_left(keys, key)
    lo, hi = max(0, right - count), min(right, len(keys) - count)
    while lo < hi:  # slide the window towards the key while its far end is nearer
        middle = (lo + hi) // 2
        if key - keys[middle] > keys[middle + count] - key:
            lo = middle + 1
        else:
            hi = middle
    return lo, lo + count


def windows(keys: Sequence[float], count: int) -> list[int]:
    """For each sorted key, the ``lo`` of :func:`nearest` (``keys``, that key, ``count``):
    the window only moves right as the key grows, so all of them cost one pass."""
    n = len(keys)
    count = min(count, n)
    starts: list[int] = []
    lo = right = 0
    for i, key in enumerate(keys):
        if i == 0 or key != keys[i - 1]:
            right = i  # bisect_left: the first of equal keys
        if right - count > lo:
            lo = right - count
        top = right if right < n - count else n - count
        while lo < top and key - keys[lo] > keys[lo + count] - key:
            lo += 1
        starts.append(lo)
    return starts


class Scale:
    """How far off a candidate is near an input: the mean absolute residual of the runs
    nearest in input (normalised conformal prediction, Papadopoulos et al. 2008), never
    below a fiftieth of its mean over the window, so a run of identical uses cannot
    promise an exact answer."""

    __slots__ = ("floor", "keys", "prefix", "width")

    def __init__(self, keys: Sequence[float], residuals: Sequence[float]) -> None:
        n = len(keys)
        self.keys = keys
        self.width = self.widths(n)
        self.prefix = list(accumulate(map(abs, residuals), initial=0.0))
        self.floor = max(1e-4, self.prefix[-1] / n / 50)

    @staticmethod
    def widths(n: int) -> int:
        """How many runs nearest in input a scale is taken over, of a window of ``n``."""
        return max(5, min(30, n // 4))

    def at(self, key: float) -> float:
        lo, hi = nearest(self.keys, key, self.width)
        return max(self.floor, (self.prefix[hi] - self.prefix[lo]) / (hi - lo))

    def left_out(self, starts: Sequence[int] | None = None) -> list[float]:
        """Each run's scale from its neighbours, itself left out; ``starts``: what
        :func:`windows` gives for these keys and ``width + 1``, when the caller has it."""
        keys, prefix, floor = self.keys, self.prefix, self.floor
        scales = []
        count = min(self.width + 1, len(keys))
        if starts is None:
            starts = windows(keys, count)
        for i, lo in enumerate(starts):
            hi = lo + count
            own = prefix[i + 1] - prefix[i] if lo <= i < hi else prefix[hi] - prefix[hi - 1]
            scale = (prefix[hi] - prefix[lo] - own) / (hi - lo - 1)
            scales.append(scale if scale > floor else floor)  # max(floor, scale): no NaN here
        return scales


class LocalPricing:
    """A local candidate's runs in residual order (allocations before the margin, scales),
    and what each margin makes of them, kept per margin: a candidate's miss rates often
    land on the same margin (the largest residual, the cap), and pricing one is a pass
    over every run."""

    __slots__ = ("allocations", "jumps", "passed", "priced", "resolution", "scales", "tail",
                 "unordered")  # fmt: skip

    def __init__(
        self,
        allocations: list[float],
        scales: list[float],
        unordered: Sequence[float],
        resolution: float,
        jumps: Sequence[float],
        tail: float,
    ) -> None:
        self.allocations, self.scales, self.resolution = allocations, scales, resolution
        self.unordered = unordered  # the scales in the runs' own order, as they are summed
        self.jumps, self.tail = jumps, tail
        self.priced: dict[float, list[float]] = {}
        self.passed: dict[float, float] = {}

    def given(self, margin_: float, covered: int) -> tuple[float, float]:
        """What the runs ``[:covered]`` are given at ``margin_`` x their scale, and all of
        them: each allocation x e^margin, the margin between the resolution and MOST."""
        each = self.priced.get(margin_)
        if each is None:
            exp, most, least = math.exp, MOST, self.resolution
            # min(MOST, max(resolution, m)) as conditionals: the same value (no NaN here)
            scaled = [margin_ * s for s in self.scales]
            each = [a * exp(most if m >= most else (m if m > least else least))
                    for a, m in zip(self.allocations, scaled, strict=True)]  # fmt: skip
            self.priced[margin_] = each
        given = sum(each[:covered])
        return given, given + sum(each[covered:])

    def passing(self, excess: float) -> float:
        """:func:`passing` over the runs, each at its own scale, averaged."""
        found = self.passed.get(excess)
        if found is None:
            jumps, tail = self.jumps, self.tail
            found = sum([passing(jumps, excess * s, tail * s) for s in self.unordered]) / len(
                self.unordered
            )
            self.passed[excess] = found
        return found


def passing(jumps: Sequence[float], excess: float, tail: float) -> float:
    """How often a new record gap passes ``excess``, from ``jumps`` (sorted): the share of
    them and the new one larger than it (a new gap is the largest of ``k + 1`` one time
    in ``k + 1``: the rank argument that calibrates every margin here), and past them
    all, that share on an exponential tail whose scale is the larger of the gaps' mean
    and ``tail`` (the process's own errors'): a few small gaps from other processes do
    not make a miss past them impossible for one whose own uses spread widely."""
    k = len(jumps)
    above = k - bisect.bisect_right(jumps, excess)
    if above:
        return (above + 1) / (k + 1)
    scale = max(sum(jumps) / k, tail, 1e-9)
    return math.exp(-(excess - jumps[-1]) / scale) / (k + 1)
