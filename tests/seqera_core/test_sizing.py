"""The online usage model: nearest-input estimate, self-chosen margin, when it does not know."""

from __future__ import annotations

import random
import time

from seqera_core.sizing import UsageModel


def _trained(points: list[tuple[float, float]], **options: int) -> UsageModel:
    model = UsageModel(**options)  # type: ignore[arg-type]
    for x, y in points:
        model.learn(x, y)
    return model


def test_too_few_runs_means_no_prediction() -> None:
    model = _trained([(float(i), 100.0) for i in range(9)])
    assert model.predict(5.0) is None
    assert model.largest == 100.0


def test_follows_usage_that_grows_with_input() -> None:
    model = _trained([(float(x), 10.0 * x) for x in range(1, 201)])
    small, large = model.predict(20.0), model.predict(180.0)
    assert small is not None and large is not None
    # The margin is the worst recent error (ratio) plus 2 %: small on an exact trend.
    assert 200 <= small <= 260
    assert 1800 <= large <= 2100


def test_input_beyond_what_was_seen_is_not_known() -> None:
    model = _trained([(float(x), 10.0 * x) for x in range(1, 101)])
    assert model.predict(100.0) is not None
    assert model.predict(200.0) is None


def test_margin_grows_with_its_own_errors() -> None:
    rng = random.Random(1)
    steady = _trained([(rng.uniform(1, 100), 1000.0) for _ in range(100)])
    noisy = _trained([(rng.uniform(1, 100), rng.uniform(500, 1500)) for _ in range(100)])
    steady_margin, noisy_margin = steady.margin(), noisy.margin()
    assert steady_margin is not None and noisy_margin is not None
    assert steady_margin < 1.05 < noisy_margin


def test_unknown_input_size_uses_the_window_mean() -> None:
    model = _trained([(float(x), 100.0 if x % 2 else 300.0) for x in range(1, 41)])
    assert model.point(None) == 200.0


def test_window_forgets_old_runs_but_not_the_largest() -> None:
    model = _trained([(1.0, 1000.0)] * 20 + [(1.0, 10.0)] * 30, window=16)
    assert model.point(1.0) == 10.0
    assert model.largest == 1000.0


def test_failures_are_bounds_not_peaks() -> None:
    model = _trained([(1.0, 10.0)] * 20)
    model.fail(8.0)
    model.fail(12.0)
    assert model.failed == 12.0
    assert model.largest == 10.0


def test_a_prediction_costs_well_under_a_millisecond() -> None:
    rng = random.Random(2)
    model = _trained([(rng.uniform(1, 1e9), rng.uniform(1e8, 1e9)) for _ in range(5000)])
    inputs = [rng.uniform(1, 1e9) for _ in range(2000)]
    started = time.perf_counter()
    for x in inputs:
        model.predict(x)
    assert (time.perf_counter() - started) / len(inputs) < 1e-4
