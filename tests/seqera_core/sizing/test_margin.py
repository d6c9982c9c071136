"""Margins: Student's t (with the pipeline's prior), conformal ranks, the upper tail."""

from __future__ import annotations

import math

import pytest

from seqera_core.sizing._margin import margin, t_quantile, upper_tail
from seqera_core.sizing._prior import Prior


@pytest.mark.parametrize(
    ("p", "dof", "expected"),
    # scipy.stats.t.ppf
    [
        (0.99, 1, 31.821),
        (0.99, 2, 6.965),
        (0.99, 5, 3.365),
        (0.99, 11, 2.718),
        (0.995, 11, 3.106),
        (0.95, 4, 2.132),
        (0.99, 30, 2.457),
    ],
)
def test_t_quantiles(p: float, dof: int, expected: float) -> None:
    assert t_quantile(p, dof) == pytest.approx(expected, rel=0.01)


def test_enough_residuals_give_the_conformal_order_statistic() -> None:
    residuals = [i / 100 for i in range(199)]  # 0.00 .. 1.98
    # ceil(200 * 0.99) = 198: the 198th smallest
    assert margin(residuals, 0.01) == pytest.approx(1.97)


def test_few_residuals_give_at_least_the_worst_and_a_t_bound() -> None:
    residuals = [0.01, -0.01, 0.0, 0.02, -0.02, 0.005, -0.005, 0.01, -0.01, 0.0, 0.015]
    bound = margin(residuals, 0.01)
    mean = sum(residuals) / len(residuals)
    spread = math.sqrt(sum((r - mean) ** 2 for r in residuals) / (len(residuals) - 1))
    assert bound >= max(residuals)
    assert bound >= mean + t_quantile(0.99, len(residuals) - 1) * spread
    assert margin(residuals, 0.01, parametric=False) == max(residuals)


def test_fractional_and_infinite_degrees_of_freedom() -> None:
    # below 3, rounded down (wider); none left to estimate: the normal quantile
    assert t_quantile(0.95, 2.7) == pytest.approx(t_quantile(0.95, 2))
    assert t_quantile(0.95, 0.4) == pytest.approx(t_quantile(0.95, 1))
    assert t_quantile(0.975, math.inf) == pytest.approx(1.95996, abs=1e-4)
    assert t_quantile(0.99, 30) < t_quantile(0.99, 11.5) < t_quantile(0.99, 11)


def test_the_pipelines_prior_moves_the_t_bound_never_below_the_tail() -> None:
    # a dozen runs whose top ones are as spread as the rest: t on 11 dof
    residuals = [0.05, -0.04, 0.0, 0.03, -0.06, 0.01, -0.02, 0.04, -0.03, 0.02, -0.01, 0.06]
    alone = margin(residuals, 0.01)
    steady = margin(residuals, 0.01, prior=Prior(0.0004, 30.0))
    erratic = margin(residuals, 0.01, prior=Prior(0.09, 30.0))
    assert max(residuals) <= steady <= alone < erratic


def test_the_upper_tail_ignores_runs_far_below_the_top() -> None:
    # an aligner at 11.05 GB give or take 0.5 %, with two runs on tiny inputs far below
    top = [math.log(11.05 + 0.01 * i) for i in range(-5, 5)]
    low = [math.log(2.0), math.log(3.0)]
    assert upper_tail(sorted(top + low), 0.01) == pytest.approx(
        upper_tail(sorted(top + [top[0]] * 2), 0.01), abs=1e-3
    )
    assert math.log(11.09) < upper_tail(sorted(top + low), 0.01) < math.log(11.09 * 1.03)
