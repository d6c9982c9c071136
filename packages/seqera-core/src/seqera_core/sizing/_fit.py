"""Calibrated upper bounds from a few runs or many: candidate predictors of one window.

Every candidate predicts the logarithm of a quantity (peak memory, run time) from the log of
the task's input size. Each run of the window is scored by the candidate fitted to the
*other* runs (leave-one-out: closed forms, no refit), and those residuals set its margin
for a miss rate (:mod:`seqera_core.sizing._margin`).

The candidates: ``quantile`` (the largest use of the others: the per-process maximum, whose
conformal margin makes it an upper order statistic), ``mean`` (their log-mean),
``median`` (the median log use of the runs nearest in input: a run that used next to
nothing, a tiny input or an early exit, does not drag its neighbours down as a mean
would) and ``power`` (least squares of log use on log input: a power law, the only one
that extrapolates). A window picks the
candidate whose calibrated allocations would have wasted least on its own runs, weighted
(by run time for memory, so the waste is in GB-hours), a miss charged its whole allocation
and a retry. The two constant candidates' t bounds lean on the pipeline's prior for a
process's dispersion (:mod:`seqera_core.sizing._prior`) while the window is small.

Past every error a window has shown, a margin's miss rate is at least what the
pipeline's records say (:meth:`seqera_core.sizing._prior.Pool.gaps`): a new run is the
largest yet 1 time in n + 1 and then lands as far past as the other processes' largest
landed past their next. The constant candidates also weigh margins at those gaps, so a
process whose dozen runs barely varied, in a pipeline whose processes jump, can buy a
margin that covers a jump where the retry would cost more.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Sequence
from itertools import accumulate
from typing import NamedTuple

from ._margin import (
    MOST,
    RESOLUTION,
    Residuals,
    margin,
    t_quantile,
    tail_scale,
    upper_tail,
)
from ._neighbours import LocalPricing, Scale, nearest, passing, windows
from ._prior import Prior

__all__ = [
    "LEVELS",
    "MISS_COST",
    "RESOLUTION",
    "Candidate",
    "Settings",
    "fit_candidates",
    "margin",
    "nearest",
    "t_quantile",
]

# What a miss costs, in units of its allocation: the attempt thrown away plus a share of
# the retry's own margin.
MISS_COST = 1.5


# The record gaps of the pipeline (as shares of them) past which a margin is also weighed.
_JUMPS = (0.5, 0.75, 0.9, 1.0)

# The miss rates a window chooses from: down to 1 in 2,000, which a process whose use
# barely varies affords for a fraction of a per cent more.
LEVELS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2)


class Settings(NamedTuple):
    """How a window is calibrated: the miss rates to choose from, and what a miss costs
    on top of its allocation (in weight x use units: a retry is worth this much waste)."""

    levels: tuple[float, ...] = LEVELS
    penalty: float = 0.0
    prior: Prior | None = None  # of the variance of a process's log use
    resolution: float = RESOLUTION  # the least log margin over a prediction
    # the pipeline's processes' gaps between their two largest log uses, sorted
    # (:meth:`seqera_core.sizing._prior.Pool.gaps`): how often, and how far, a new run
    # passes everything a process has shown
    jumps: tuple[float, ...] = ()


class Candidate:
    """One fitted predictor of a window: its log centre for an input, and its log margin
    (in units of the local scale for a ``local`` one)."""

    __slots__ = (
        "cost", "excess", "intercept", "keys", "kind", "local", "margin", "resolution", "safe",
        "slope", "values", "width",
    )  # fmt: skip

    def __init__(
        self, kind: str, margin_: float, cost: float, safe: float, resolution: float = RESOLUTION
    ) -> None:
        self.kind = kind
        self.resolution = resolution
        self.margin = margin_
        self.cost = cost
        self.safe = safe  # the margin at the least miss rate: what a retry is sized at
        # how far past a margin it passes a miss lands, on average (its errors' tail scale)
        self.excess = resolution
        self.intercept = 0.0  # quantile, mean: the centre; power: the intercept
        self.slope = 0.0
        self.keys: Sequence[float] = ()
        self.values: Sequence[float] = ()  # median: the log uses, in order of ``keys``
        self.width = 0
        self.local: Scale | None = None

    def centre(self, key: float | None) -> float:
        """The log prediction (no margin) for log input ``key``."""
        if self.kind == "power" and key is not None:
            return self.intercept + self.slope * key
        if self.kind == "median" and key is not None:
            lo, hi = nearest(self.keys, key, self.width)
            return _median_of(list(self.values[lo:hi]))
        return self.intercept

    def upper(self, key: float | None, *, safe: bool = False) -> float:
        """The log allocation: centre plus margin (the least miss rate's if ``safe``)."""
        margin_ = self.safe if safe else self.margin
        if self.local is not None and key is not None:
            return self.centre(key) + min(MOST, max(self.resolution, margin_ * self.local.at(key)))
        return self.centre(key) + max(self.resolution, margin_)

    def overshoot(self, key: float | None) -> float:
        """The log scale of how far past its bound a miss lands, near ``key``."""
        if self.local is not None and key is not None:
            return min(MOST, max(self.resolution, self.excess * self.local.at(key)))
        return min(MOST, max(self.resolution, self.excess))


class _Runs(NamedTuple):
    """A window's runs as every candidate is calibrated on them: log uses, weights, and
    weight x use of each run, which every candidate's waste subtracts (computed once)."""

    values: Sequence[float]
    weights: Sequence[float]
    used: list[float]


def _runs(values: Sequence[float], weights: Sequence[float]) -> _Runs:
    return _Runs(values, weights, [w * math.exp(v) for v, w in zip(values, weights, strict=True)])


def _spent(centres: Sequence[float], weights: Sequence[float]) -> list[float]:
    """Weight x predicted use of each run: a candidate's allocations, before its margin."""
    return [w * math.exp(c) for c, w in zip(centres, weights, strict=True)]


def _calibrated(
    kind: str,
    centres: Sequence[float],
    runs: _Runs,
    settings: Settings,
    floor: Callable[[float], float] | None = None,
    scales: Sequence[float] | None = None,
    prior: Prior | None = None,
    spent: Sequence[float] | None = None,
) -> Candidate:
    """The candidate at the miss rate, among ``settings.levels``, that costs least;
    ``floor(alpha)``, when given, is the least margin at a miss rate; with ``scales``,
    residuals are divided by them (and margins are in those units); ``prior`` is of the
    residuals' variance; ``spent``: :func:`_spent` of ``centres``, when the caller has it.

    Each margin's cost is a handful of operations over prefix sums, except with
    ``scales``, where every run's allocation is its own: a pass over the runs per margin
    (a margin already priced is not priced again)."""
    values = runs.values
    n = len(values)
    if spent is None:
        spent = _spent(centres, runs.weights)
    residuals = [v - c for v, c in zip(values, centres, strict=True)]
    if scales is not None:
        residuals = [r / scale for r, scale in zip(residuals, scales, strict=True)]
    order = sorted(range(n), key=residuals.__getitem__)
    # the same stable sort of the same keys: the residuals in order, as sorted() gives them
    ordered = Residuals([residuals[i] for i in order])
    # Over the runs by residual: sum of weight x centre, and of weight x use, so the cost
    # of any margin is two prefix sums and a bisection.
    allocated = list(accumulate([spent[i] for i in order], initial=0.0))
    used = list(accumulate([runs.used[i] for i in order], initial=0.0))
    top, jumps = ordered.ordered[-1], settings.jumps
    # how far past its largest errors this candidate's errors run: past every gap the
    # pipeline has shown, a record runs on by this much or the gaps' own mean
    tail = tail_scale(ordered.ordered) if n >= 3 else 0.0
    # Margins to weigh: one per miss rate of ``settings.levels``, and past the largest
    # error by each of a few of the pipeline's record gaps (rated by those, not alpha).
    margins: list[tuple[float, float, bool]] = []
    for alpha in settings.levels:
        margin_ = ordered.margin(alpha, parametric=floor is None, prior=prior)
        if floor is not None:
            margin_ = max(margin_, floor(alpha))
        margins.append((margin_, alpha, True))
    if jumps and scales is None and kind in ("quantile", "mean"):
        picked = {jumps[min(len(jumps) - 1, int(q * len(jumps)))] for q in _JUMPS}
        margins += [(top + gap, settings.levels[0], False) for gap in sorted(picked) if gap > 0]
    local = None if scales is None else LocalPricing(
        [spent[i] for i in order], [scales[i] for i in order], scales, settings.resolution,
        jumps, tail)  # fmt: skip
    best: Candidate | None = None
    safe = -math.inf
    for margin_, alpha, level in margins:
        margin_ = min(margin_, MOST)
        if local is None:
            margin_ = max(margin_, settings.resolution)
        covered = bisect.bisect_right(ordered.ordered, margin_)
        if local is None:
            scale = math.exp(margin_)
            given, total = scale * allocated[covered], scale * allocated[n]
        else:  # each run its own scale: no common factor to take out
            given, total = local.given(margin_, covered)
        # Misses to expect among n new runs: a margin at the k-th of n residuals is passed
        # by (n + 1 - k) / (n + 1) of new ones (the conformal rank argument), one past
        # them all by alpha, as its bound was built for; never fewer than in the window.
        rate = alpha if covered == n and margin_ > top else (n - covered + 1) / (n + 1)
        if jumps and covered == n:
            # Past every error seen, a miss is a new record: 1 in n + 1 runs is one, and
            # it lands past the margin as often as the pipeline's records pass theirs
            # (in log units: each run's own scale for a local candidate).
            excess = margin_ - top
            passed = passing(jumps, excess, tail) if local is None else local.passing(excess)
            rate = max(rate, passed / (n + 1))
        cost = given - used[covered] + rate * n * (MISS_COST * total / n + settings.penalty)
        if level:
            safe = max(safe, margin_)
        if best is None or cost < best.cost:
            best = Candidate(kind, margin_, cost, 0.0, settings.resolution)
    assert best is not None
    best.safe = safe
    if n >= 3:
        best.excess = tail_scale(ordered.ordered)
    return best


def _local(
    keys: Sequence[float],
    starts: Sequence[int],
    fitted: _Fitted,
    runs: _Runs,
    settings: Settings,
) -> Candidate:
    """``base`` with a margin that follows how far off it is near each input; ``starts``:
    the scales' windows (:func:`windows`), the same for every candidate of ``keys``."""
    base, centres = fitted.candidate, fitted.centres
    scale = Scale(keys, [v - c for v, c in zip(runs.values, centres, strict=True)])
    candidate = _calibrated(base.kind, centres, runs, settings, scales=scale.left_out(starts),
                            spent=fitted.spent)  # fmt: skip
    candidate.intercept, candidate.slope = base.intercept, base.slope
    candidate.keys, candidate.values, candidate.width = base.keys, base.values, base.width
    candidate.local = scale
    return candidate


def _constant(runs: _Runs, settings: Settings) -> list[Candidate]:
    values, weights = runs.values, runs.weights
    n = len(values)
    total = sum(values)
    others_mean = [(total - v) / (n - 1) for v in values]
    prior = settings.prior
    if prior is not None:
        # a left-out residual is n / (n - 1) x the run's deviation from the mean of all
        prior = Prior(prior.variance * (n / (n - 1)) ** 2, prior.dof)
    mean = _calibrated("mean", others_mean, runs, settings, prior=prior)
    mean.intercept = total / n
    top = max(range(n), key=values.__getitem__)
    second = max((values[i] for i in range(n) if i != top), default=values[top])
    others_max = [second if i == top else values[top] for i in range(n)]
    # two centres only: each one's exp once (w x exp(c), as _spent computes it)
    most, next_ = math.exp(values[top]), math.exp(second)
    spent = [w * most for w in weights]
    spent[top] = weights[top] * next_
    ordered = sorted(values)
    spread = Residuals([v - c for v, c in zip(values, others_mean, strict=True)])

    def floor(alpha: float) -> float:
        # Too few runs for an order statistic that far out: the maximum is no bound
        # either. Past it, the log-normal prediction bound of the mean, or the upper
        # tail alone where that is less: runs far below the others (a tiny input) widen
        # the first and say nothing of how far above the others a run may land.
        if math.ceil((n + 1) * (1 - alpha)) <= n:
            return -math.inf
        normal = mean.intercept + spread.margin(alpha, parametric=True, prior=prior)
        return min(normal, upper_tail(ordered, alpha)) - values[top]

    quantile = _calibrated("quantile", others_max, runs, settings, floor, spent=spent)
    quantile.intercept = values[top]
    return [quantile, mean]


def _median_of(values: list[float]) -> float:
    """:func:`statistics.median`, the same arithmetic, without its generality."""
    values.sort()
    half = len(values) // 2
    return values[half] if len(values) % 2 else (values[half - 1] + values[half]) / 2


class _Fitted(NamedTuple):
    candidate: Candidate
    centres: list[float]  # each run's left-out prediction
    spent: list[float]  # _spent of them


def _median(keys: Sequence[float], runs: _Runs, settings: Settings) -> _Fitted:
    values = runs.values
    n = len(keys)
    width = max(3, min(16, round(math.sqrt(n))))
    centres = []
    count = min(width + 1, n)
    for i, lo in enumerate(windows(keys, count)):
        key, hi = keys[i], lo + count
        if lo <= i < hi:
            others = [*values[lo:i], *values[i + 1 : hi]]
        elif key - keys[lo] > keys[hi - 1] - key:  # a tie took i's place: drop the far end
            others = list(values[lo + 1 : hi])
        else:
            others = list(values[lo : hi - 1])
        centres.append(_median_of(others))
    spent = _spent(centres, runs.weights)
    candidate = _calibrated("median", centres, runs, settings, spent=spent)
    candidate.keys, candidate.values, candidate.width = keys, values, width
    return _Fitted(candidate, centres, spent)


def _power(keys: Sequence[float], runs: _Runs, settings: Settings) -> _Fitted | None:
    values = runs.values
    n = len(keys)
    mean_key, mean_value = sum(keys) / n, sum(values) / n
    sxx = sum([(k - mean_key) ** 2 for k in keys])
    if sxx < 1e-6 * n:  # (almost) one input size: no slope to learn
        return None
    slope = sum([(k - mean_key) * (v - mean_value)
                 for k, v in zip(keys, values, strict=True)]) / sxx  # fmt: skip
    intercept = mean_value - slope * mean_key
    centres = []
    for key, value in zip(keys, values, strict=True):
        leverage = 1 / n + (key - mean_key) ** 2 / sxx
        if leverage > 1 - 1e-9:
            # One run alone carries the slope (every other input the same size): without
            # it there is no slope, so the fit cannot be checked on it. Nothing to learn.
            return None
        residual = value - intercept - slope * key
        # the residual the fit without this run would have had (the hat-matrix identity)
        centres.append(value - residual / (1 - leverage))
    spent = _spent(centres, runs.weights)
    candidate = _calibrated("power", centres, runs, settings, spent=spent)
    candidate.intercept, candidate.slope = intercept, slope
    return _Fitted(candidate, centres, spent)


def fit_candidates(
    keys: Sequence[float] | None,
    values: Sequence[float],
    weights: Sequence[float],
    settings: Settings,
) -> list[Candidate]:
    """Every candidate the window supports, each at its cheapest miss rate; cheapest
    (least estimated waste) first. ``keys`` are log inputs sorted ascending (``values`` and
    ``weights`` in the same order), or ``None`` when the runs have no input size.
    Needs at least 3 runs; ``median`` and ``power`` need 6 with an input size.
    """
    runs = _runs(values, weights)
    candidates = _constant(runs, settings)
    if keys is not None and len(keys) >= 6:
        starts = windows(keys, min(Scale.widths(len(keys)) + 1, len(keys)))
        for found in (_median(keys, runs, settings), _power(keys, runs, settings)):
            if found is not None:
                candidates.append(found.candidate)
                candidates.append(_local(keys, starts, found, runs, settings))
    candidates.sort(key=lambda c: c.cost)  # stable: the simpler one wins a tie
    return candidates
