"""Calibration: Student's t, conformal ranks, and the nearest-input windows."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seqera_core.sizing_fit import _windows, margin, nearest, t_quantile


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


@given(
    keys=st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 7.0]) | st.floats(0, 10),
                  min_size=1, max_size=40),
    count=st.integers(1, 12),
)  # fmt: skip
def test_sliding_windows_match_the_binary_search(keys: list[float], count: int) -> None:
    keys.sort()
    count = min(count, len(keys))
    assert _windows(keys, count) == [nearest(keys, key, count)[0] for key in keys]
