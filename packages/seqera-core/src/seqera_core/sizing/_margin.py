"""How far above a prediction a new run may land: margins from leave-one-out residuals.

For a target miss rate ``alpha`` and ``n`` residuals (each run's log use less what a
predictor fitted to the *other* runs said):

- with enough runs (``ceil((n + 1)(1 - alpha)) <= n``) the margin is that order statistic
  of the residuals: the jackknife form of conformal prediction, whose coverage holds for
  any distribution of exchangeable runs (Vovk, Gammerman & Shafer 2005; Barber et al.,
  "Predictive inference with the jackknife+", Ann. Statist. 2021);
- with fewer, no order statistic is far enough out: the margin is the largest of the
  residual seen, an exponential tail fitted to the top residuals, and the Student-t
  prediction bound ``mean + t(d, 1-alpha) s sqrt(1 + 1/n)``, where ``s`` and ``d`` are
  the process's own (``n - 1`` degrees of freedom) or, given the pipeline's
  :class:`~seqera_core.sizing._prior.Prior`, its posterior variance and degrees of freedom:
  a process whose peak barely varies gets a margin of a few per cent from a dozen runs,
  an erratic one a wide one, and one with a handful of runs what its pipeline has shown.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from statistics import NormalDist

from ._prior import Prior

__all__ = ["MOST", "RESOLUTION", "Residuals", "margin", "t_quantile", "tail_scale", "upper_tail"]

# The least log margin over a prediction: a peak is sampled (Nextflow reads /proc every
# few seconds, a cgroup's counter is rounded to pages), so two runs that used "the same"
# differ by about this much.
RESOLUTION = 0.005
# The most a margin may add: 64 x the prediction. Past it a tail fitted to a few wild
# errors says nothing (and exp() overflows).
MOST = math.log(64)

_NORMAL = NormalDist()


def t_quantile(p: float, dof: float) -> float:
    """The ``p`` quantile (``p >= 0.5``) of Student's t with ``dof`` degrees of freedom.

    Cornish-Fisher expansion in the normal quantile (Abramowitz & Stegun 26.7.5), exact
    enough from 3 degrees of freedom on; 1 and 2 have closed forms, and a fractional
    ``dof`` below 3 is rounded down (a wider bound), below 1 up to 1.
    """
    if math.isinf(dof):
        return _NORMAL.inv_cdf(p)
    if dof < 3:
        dof = max(1, math.floor(dof))
    if dof == 1:
        return math.tan(math.pi * (p - 0.5))
    if dof == 2:
        a = 4 * p * (1 - p)
        return (2 * p - 1) * math.sqrt(2 / a)
    z = _NORMAL.inv_cdf(p)
    z2 = z * z
    g1 = (z2 + 1) * z / 4
    g2 = ((5 * z2 + 16) * z2 + 3) * z / 96
    g3 = (((3 * z2 + 19) * z2 + 17) * z2 - 15) * z / 384
    g4 = ((((79 * z2 + 776) * z2 + 1482) * z2 - 1920) * z2 - 945) * z / 92160
    v = float(dof)
    return z + g1 / v + g2 / v**2 + g3 / v**3 + g4 / v**4


def margin(
    residuals: Sequence[float],
    alpha: float,
    *,
    parametric: bool = True,
    prior: Prior | None = None,
) -> float:
    """The log margin that ``1 - alpha`` of new runs stay under (see the module's rules).

    ``parametric=False`` (for the ``quantile`` candidate, whose residuals are one-sided by
    construction) replaces the t bound by the largest residual alone; ``prior`` is of the
    residuals' variance.
    """
    return Residuals(residuals).margin(alpha, parametric=parametric, prior=prior)


class Residuals:
    """Sorted residuals with what every miss rate's margin needs, computed once."""

    __slots__ = ("mean", "ordered", "spread")

    def __init__(self, residuals: Sequence[float]) -> None:
        self.ordered = sorted(residuals)
        n = len(self.ordered)
        self.mean = sum(self.ordered) / n
        self.spread = (
            math.sqrt(sum([(r - self.mean) ** 2 for r in self.ordered]) / (n - 1)) if n > 1 else 0.0
        )

    def margin(self, alpha: float, *, parametric: bool, prior: Prior | None = None) -> float:
        """See :func:`margin`."""
        ordered = self.ordered
        n = len(ordered)
        rank = math.ceil((n + 1) * (1 - alpha))
        if rank <= n:
            return ordered[rank - 1]
        worst = ordered[-1]
        if not parametric or n < 3:
            return worst
        variance, dof = self.spread**2, float(n - 1)
        if prior is not None:
            variance, dof = prior.posterior(variance, dof)
        spread = math.sqrt(variance) * math.sqrt(1 + 1 / n)
        bound = self.mean + t_quantile(1 - alpha, dof) * spread
        return max(bound, worst, upper_tail(ordered, alpha))


def upper_tail(ordered: Sequence[float], alpha: float) -> float:
    """The ``1 - alpha`` quantile of sorted values (at least 3) past the largest, from an
    exponential tail fitted to the top third (at most ten) of them: the mean-excess
    estimator of peaks over a threshold (Davison & Smith, "Models for exceedances over
    high thresholds", JRSS B 52(3), 1990), heavier than a normal tail, so a skewed
    process is not held to a symmetric bound, and blind to values far below the top;
    with its scale's uncertainty (Lomax predictive) while there are few of them."""
    n = len(ordered)
    top = max(2, min(10, n // 3))
    threshold = ordered[n - 1 - top]
    # The share of new values past the threshold that may pass the bound. With the scale
    # known, an exponential tail puts it scale x ln(1/share) past the threshold; estimated
    # from ``top`` excesses, a new excess follows the predictive Lomax law instead,
    # P(Y > y) = (1 + y / (top x scale))^-top (a scale prior of 1/scale): wider while
    # ``top`` is small, the same as it grows (the finite-sample correction).
    share = (n + 1) * alpha / top
    return threshold + top * tail_scale(ordered) * (math.pow(share, -1 / top) - 1)


def tail_scale(ordered: Sequence[float]) -> float:
    """The scale of the exponential tail :func:`upper_tail` fits to sorted values: how far
    past a high one the next value that passes it lands, on average."""
    n = len(ordered)
    top = max(2, min(10, n // 3))
    return sum(ordered[n - top :]) / top - ordered[n - 1 - top]
