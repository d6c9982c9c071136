"""A pipeline's processes lend each other what they know about dispersion.

A process with a dozen runs has a poor estimate of how much its peak varies; its
pipeline's other processes have shown how much peaks vary there. Each process's log uses
give a sample variance ``s_p^2`` on ``d_p = n_p - 1`` degrees of freedom; taken together
they estimate a scaled inverse chi-square prior ``(s0^2, d0)`` for a process's variance by
the method of moments on ``log s_p^2`` (Smyth, "Linear models and empirical Bayes methods
for assessing differential expression in microarray experiments", Stat. Appl. Genet. Mol.
Biol. 3(1), 2004, section 6.2: limma's ``fitFDist``/``squeezeVar``). A process then uses

    s~^2 = (d0 s0^2 + d_p s_p^2) / (d0 + d_p)   on   d0 + d_p   degrees of freedom,

which leans on the pipeline while the process has few runs and on itself as they grow,
as strongly as the pipeline's processes are alike: when their dispersions differ by
orders of magnitude (an aligner whose peak never moves beside a tool whose peak follows
its input), ``d0`` is small and each process keeps its own. Processes with no runs to
speak of (fewer than 3) borrow nothing yet; fewer than 3 processes give no prior.
"""

from __future__ import annotations

import math
from typing import NamedTuple

__all__ = ["Moments", "Pool", "Prior", "digamma", "trigamma", "trigamma_inverse"]

# A process's own variance below this (log units squared) is sampling resolution, not
# dispersion: a peak read every few seconds, rounded to pages.
_FLOOR = 1e-6
# The largest prior weight: past it the pooled variance is as good as known.
_MOST = 1e6


def digamma(x: float) -> float:
    """The digamma function for ``x > 0``: recurrence up to 6, then the asymptotic series
    (Abramowitz & Stegun 6.3.5, 6.3.18)."""
    shift = 0.0
    while x < 6:
        shift -= 1 / x
        x += 1
    inv2 = 1 / (x * x)
    return shift + math.log(x) - 0.5 / x - inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 / 252))


def trigamma(x: float) -> float:
    """The trigamma function for ``x > 0`` (A&S 6.4.6, 6.4.12)."""
    shift = 0.0
    while x < 6:
        shift += 1 / (x * x)
        x += 1
    inv = 1 / x
    inv2 = inv * inv
    return shift + inv + inv2 / 2 + inv * inv2 * (1 / 6 - inv2 * (1 / 30 - inv2 / 42))


def trigamma_inverse(y: float) -> float:
    """The ``x > 0`` with ``trigamma(x) == y`` (``y > 0``): Newton's method on
    ``1 / trigamma``, which is nearly linear (Smyth 2004, limma's ``trigammaInverse``)."""
    if y > 1e7:
        return 1 / math.sqrt(y)
    if y < 1e-6:
        return 1 / y
    x = 0.5 + 1 / y
    for _ in range(50):
        value = trigamma(x)
        # d(1/trigamma)/dx = -tetragamma / trigamma^2; tetragamma ~ -(trigamma) * 2/(2x-1)
        step = value * (1 - value / y) / _tetragamma(x)
        x += step
        if -step / x < 1e-8:
            break
    return x


def _tetragamma(x: float) -> float:
    shift = 0.0
    while x < 6:
        shift -= 2 / x**3
        x += 1
    inv = 1 / x
    inv2 = inv * inv
    return shift - inv2 - inv * inv2 - inv2 * inv2 * (0.5 - inv2 * (1 / 6 - inv2 / 6))


class Prior(NamedTuple):
    """A scaled inverse chi-square prior for a process's variance of log use."""

    variance: float
    dof: float

    def posterior(self, variance: float, dof: float) -> tuple[float, float]:
        """The process's variance (and its degrees of freedom) with the prior's weight."""
        if self.dof >= _MOST:
            return self.variance, math.inf
        total = self.dof + dof
        return (self.dof * self.variance + dof * variance) / total, total


class Moments:
    """Running count, mean and sum of squared deviations of one process's log uses
    (Welford's update: exact and O(1) per run), and its two largest."""

    __slots__ = ("m2", "mean", "n", "second", "top")

    def __init__(self) -> None:
        self.n = 0
        self.mean = 0.0
        self.m2 = 0.0
        self.top = self.second = -math.inf

    def add(self, value: float) -> None:
        """Count one log use."""
        self.n += 1
        delta = value - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (value - self.mean)
        if value > self.top:
            self.top, self.second = value, self.top
        elif value > self.second:
            self.second = value

    @property
    def gap(self) -> float:
        """How far its largest log use is past the next (0 with fewer than 2 runs)."""
        return self.top - self.second if self.n > 1 else 0.0

    @property
    def variance(self) -> float:
        """The sample variance (0 with fewer than 2 runs)."""
        return self.m2 / (self.n - 1) if self.n > 1 else 0.0


class Pool:
    """The processes of one history, each a :class:`Moments`; their :class:`Prior`."""

    __slots__ = ("_cache", "_members")

    def __init__(self) -> None:
        self._members: list[Moments] = []
        # per process asking: the run counts of the others when last asked, and what
        # they lent it then (their prior and their gaps)
        self._cache: dict[int, tuple[tuple[int, ...], Prior | None, tuple[float, ...]]] = {}

    def member(self) -> Moments:
        """A new process's moments, counted in the prior from its third run on."""
        moments = Moments()
        self._members.append(moments)
        return moments

    def lent(self, asking: Moments | None) -> tuple[Prior | None, tuple[float, ...]]:
        """What the processes with 3 runs or more but ``asking`` lend it (a process does
        not lend to itself): their prior and their gaps, refitted when one of them has
        learned a run since."""
        counted = [m for m in self._members if m.n >= 3 and m is not asking]
        key = tuple(m.n for m in counted)
        cached = self._cache.get(id(asking))
        if cached is not None and cached[0] == key:
            return cached[1], cached[2]
        prior = _fit([m.variance for m in counted], [m.n - 1 for m in counted])
        gaps = tuple(sorted(m.gap for m in counted))
        self._cache[id(asking)] = (key, prior, gaps)
        return prior, gaps

    def prior(self, asking: Moments | None = None) -> Prior | None:
        """The prior of the processes with 3 runs or more but ``asking`` (a process does
        not lend to itself); ``None`` with fewer than 3 of them."""
        return self.lent(asking)[0]

    def gaps(self, asking: Moments | None = None) -> tuple[float, ...]:
        """How far each process's largest log use is past its next (3 runs or more, not
        ``asking``), sorted: how far past its largest a process's next record lands.

        Among ``n`` exchangeable runs and a new one, the new one is the largest with
        probability ``1 / (n + 1)``, and then passes the old largest by the gap of the top
        two of ``n + 1``; an exponential tail's gap does not depend on ``n`` (Rényi's
        representation of exponential spacings). A process with a dozen steady runs has
        shown no gap worth the name; its pipeline's processes show how often one jumps.
        """
        return self.lent(asking)[1]


def _fit(variances: list[float], dofs: list[int]) -> Prior | None:
    """Smyth's moment estimator of ``(s0^2, d0)`` from sample variances and their dof."""
    k = len(variances)
    if k < 3:
        return None
    # log s^2 - E[log chi2_d / d] has mean log s0^2 and variance trigamma(d0/2) + trigamma(d/2)
    e = [math.log(max(v, _FLOOR)) - digamma(d / 2) + math.log(d / 2)
         for v, d in zip(variances, dofs, strict=True)]  # fmt: skip
    mean = sum(e) / k
    spread = sum((x - mean) ** 2 for x in e) / (k - 1) - sum(trigamma(d / 2) for d in dofs) / k
    if spread <= 0:  # no more alike could they be: the pooled variance, as known
        return Prior(math.exp(mean), _MOST)
    d0 = 2 * trigamma_inverse(spread)
    return Prior(math.exp(mean + digamma(d0 / 2) - math.log(d0 / 2)), d0)
