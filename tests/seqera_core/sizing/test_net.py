"""The safety net: the plain per-process maximum where the model has wasted more."""

from __future__ import annotations

import math

import pytest

from seqera_core.sizing import UsageModel
from seqera_core.sizing._net import Net, cost
from seqera_core.sizing._prior import Moments


def test_cost_counts_waste_and_retries_as_an_evaluation_does() -> None:
    assert cost(10.0, 8.0, 2.0, lambda failed: 2 * failed) == (4.0, 0)
    # 4 fails (4 x 2 wasted), 8 fails (8 x 2), 16 holds 10: 6 x 2 left over
    assert cost(4.0, 10.0, 2.0, lambda failed: 2 * failed) == (8.0 + 16.0 + 12.0, 2)
    # a retry rule that never grows still ends: at least 5 % more each time
    waste, retries = cost(1.0, 1.2, 1.0, lambda failed: failed)
    assert retries == 4 and waste == pytest.approx(1 + 1.05 + 1.05**2 + 1.05**3 + 1.05**4 - 1.2)


def test_behind_once_clearly_worse_back_once_no_worse() -> None:
    net = Net(0.02, span=40, least=20)
    for _ in range(19):
        net.score((2.0, 0), (1.0, 0), 1000)
    assert not net.behind  # too few to judge
    net.score((2.0, 0), (1.0, 0), 1000)
    assert net.behind
    for _ in range(20):  # the model does better since: 20 x 2 + 20 x 0 against 40 x 1
        net.score((0.0, 0), (1.0, 0), 1000)
    assert not net.behind
    # within 25 % of the maximum is no verdict
    net = Net(0.02, span=40, least=20)
    for _ in range(20):
        net.score((1.2, 0), (1.0, 0), 1000)
    assert not net.behind


def test_never_buys_waste_with_retries() -> None:
    # the maximum wastes less but retries 2 tasks in 20 the model held: not behind
    net = Net(0.02, span=40, least=20)
    for i in range(20):
        net.score((2.0, 0), (1.0, int(i < 2)), 1000)
    assert not net.behind


def _steady(model: UsageModel, runs: int) -> None:
    for i in range(runs):
        size = model.upper(1000 + i)  # asked, as a resolver asks before each task
        assert size is not None
        model.answered(1000 + i, size)
        model.learn(1000 + i, 1e9, weight=10.0)


def test_a_steady_process_falls_back_to_its_maximum_and_is_scored_meanwhile() -> None:
    # A process whose peak never moves: the maximum wastes nothing, the model its margin.
    # With 50 runs behind it the maximum misses a record no more often than the model is
    # calibrated to (1 in 51 against alpha 0.02).
    model = UsageModel(alpha=0.02, retry_cost=3.0)
    model.learn(999, 1e9, weight=10.0)
    _steady(model, 49)  # the first 20 judged at 21 runs and more: too few for the maximum
    assert model.net is not None and model.net.behind
    assert model.upper(1000) == 1e9
    assert model.own(1000) > 1e9  # type: ignore[operator]
    # a task it was never asked about is not scored
    tasks = len(model.net._tasks)
    model.learn(5000, 1e9)
    assert len(model.net._tasks) == tasks
    assert UsageModel(net=False).net is None


def test_a_young_process_is_not_handed_to_a_maximum_that_misses_more_than_the_model() -> None:
    # The same process with one run behind it: scored alike, and its model wastes more,
    # but the maximum of 25 runs misses the next 1 time in 26, more often than the model
    # is calibrated to (alpha 0.02), whatever these runs held.
    model = UsageModel(alpha=0.02, retry_cost=3.0)
    model.learn(999, 1e9, weight=10.0)
    _steady(model, 24)
    assert model.net is not None and len(model.net._tasks) >= model.net.least
    assert not model.net.behind and model.upper(1000) > 1e9  # type: ignore[operator]
    # and the same scores from a process of 1,000 runs are a verdict
    net = Net(0.02, least=20)
    for scored in model.net._tasks:
        net.score((scored[0], scored[1]), (scored[2], scored[3]), 1000)
    assert net.behind


def _read_back(
    peaks: list[float], runs: int | None = None, every: list[float] | None = None, **options: float
) -> UsageModel:
    """A process read back from a history: its all-time summary (of ``every`` use, the
    window's when not given), then its window of ``peaks``, as the resolver loads it."""
    model = UsageModel(**options)  # type: ignore[arg-type]
    every = every or peaks
    model.resume(len(every), max(every), _moments(every))
    for i, peak in enumerate(peaks):
        model.recall(1000 + i, peak, weight=10.0)
    return model


def test_the_net_judges_a_process_from_its_history_before_its_first_task() -> None:
    # A process whose peak never moves: over its own finished runs the maximum wasted
    # nothing and the model its margin. Read back from a history, the net scores them
    # before the first answer and gives the maximum from the first task, not after 20.
    peaks = [1e9] * 60
    model = _read_back(peaks, alpha=0.02, retry_cost=3.0)
    assert model.upper(1000) == 1e9
    assert model.net is not None and model.net.behind
    # from the tenth on: the model's answers from a handful of runs are no verdict on it
    assert len(model.net._tasks) == len(peaks) - 10
    assert model.own(1000) > 1e9  # type: ignore[operator]
    # the window is back as it was: the model answers as one that never rehearsed
    plain = _read_back(peaks, alpha=0.02, retry_cost=3.0, net=False)
    assert plain.own(1000) == model.own(1000)


def test_a_history_where_the_maximum_was_killed_keeps_the_model() -> None:
    # Peaks that climb: each new run passes the largest before it, so the plain maximum
    # is killed and retried on each; the model's margin covers them.
    model = _read_back([1e9 * 1.01**i for i in range(40)], alpha=0.02, retry_cost=3.0)
    assert model.upper(1000) != model.largest
    assert model.net is not None and not model.net.behind


def test_only_the_windows_last_runs_are_rehearsed() -> None:
    model = _read_back([1e9] * 200, net=True)
    model.upper(None)
    assert model.net is not None and len(model.net._tasks) == 64


def test_the_largest_use_before_a_window_comes_from_the_summary() -> None:
    # 100 runs, the window holds the last 40; the all-time largest came before it: the
    # maximum is scored from it, and wasted 4 GB a run where the model did not.
    early, late = [5e9] + [1e9] * 59, [1e9] * 40
    model = _read_back(late, every=early + late, alpha=0.02, retry_cost=3.0)
    assert model._before(late) == 5e9
    model.upper(1000)
    assert model.net is not None and not model.net.behind
    # the two largest both in the window: nothing is known of what came before it
    inside = _read_back([5e9, 4e9], every=[1e9] * 98 + [5e9, 4e9])
    assert inside._before([5e9, 4e9]) == 0.0
    assert inside._before([5e9, 1e9]) == pytest.approx(4e9)


def _moments(peaks: list[float]) -> tuple[int, float, float, float, float]:
    moments = Moments()
    for peak in peaks:
        moments.add(math.log(peak))
    return moments.n, moments.mean, moments.m2, moments.top, moments.second
