"""The pipeline's prior for a process's dispersion: special functions and Smyth's estimator."""

from __future__ import annotations

import math
import random

import pytest

from seqera_core.sizing._prior import Pool, Prior, digamma, trigamma, trigamma_inverse


def test_special_functions() -> None:
    # A&S 6.3.2 (digamma(1) = -Euler's gamma), 6.4.2 (trigamma(1) = pi^2 / 6), 6.3.3
    assert digamma(1.0) == pytest.approx(-0.5772156649, abs=1e-8)
    assert digamma(0.5) == pytest.approx(-0.5772156649 - 2 * math.log(2), abs=1e-8)
    assert trigamma(1.0) == pytest.approx(math.pi**2 / 6, abs=1e-8)
    assert trigamma(0.5) == pytest.approx(math.pi**2 / 2, abs=1e-8)
    for x in (0.05, 0.3, 1.0, 4.5, 40.0, 3000.0):
        assert trigamma_inverse(trigamma(x)) == pytest.approx(x, rel=1e-6)


def _pool(spreads: list[float], runs: int, seed: int = 1) -> Pool:
    rng = random.Random(seed)
    pool = Pool()
    for spread in spreads:
        member = pool.member()
        for _ in range(runs):
            member.add(rng.gauss(20.0, spread))
    return pool


def test_alike_processes_lend_much_and_unlike_ones_little() -> None:
    # 400 processes whose variances are drawn from a scaled inverse chi-square with
    # s0 = 0.1 on 8 dof: the estimator finds both
    rng = random.Random(2)
    spreads = [math.sqrt(0.01 * 8 / sum(rng.gauss(0, 1) ** 2 for _ in range(8)))
               for _ in range(400)]  # fmt: skip
    prior = _pool(spreads, 12).prior()
    assert prior is not None
    assert math.sqrt(prior.variance) == pytest.approx(0.1, rel=0.15)
    assert 5 < prior.dof < 13
    # an aligner that never moves, a tool that follows its input, and between: dispersions
    # three orders of magnitude apart lend almost nothing
    unlike = _pool([0.002, 0.02, 0.2, 1.5, 0.005, 0.6], 12).prior()
    assert unlike is not None and unlike.dof < 1.5
    alike = _pool([0.05] * 10, 12).prior()
    assert alike is not None and alike.dof > 20


def test_too_few_processes_or_runs_give_no_prior() -> None:
    assert _pool([0.1, 0.1], 12).prior() is None
    assert _pool([0.1] * 5, 2).prior() is None  # 2 runs: not yet counted


def test_the_posterior_leans_on_the_prior_while_the_process_has_few_runs() -> None:
    prior = Prior(0.01, 4.0)
    assert prior.posterior(0.0001, 1.0) == pytest.approx(((4 * 0.01 + 0.0001) / 5, 5.0))
    few, _ = prior.posterior(0.0001, 2.0)
    many, _ = prior.posterior(0.0001, 200.0)
    assert few > many > 0.0001
    assert Prior(0.01, 1e6).posterior(1.0, 3.0) == (0.01, math.inf)


def test_the_gaps_are_between_each_processs_two_largest_uses() -> None:
    pool = Pool()
    members = [pool.member() for _ in range(4)]
    for member, values in zip(members, ([1.0, 2.0, 2.5], [0.0, 0.0, 0.0, 0.1], [3.0, 1.0],
                                        [5.0, 4.0, 4.0]), strict=True):  # fmt: skip
        for value in values:
            member.add(value)
    # the third has too few runs; a process does not count its own
    assert pool.gaps() == pytest.approx((0.1, 0.5, 1.0))
    assert pool.gaps(members[3]) == pytest.approx((0.1, 0.5))
    members[2].add(2.0)
    assert pool.gaps() == pytest.approx((0.1, 0.5, 1.0, 1.0))
