"""The online usage model: calibrated margins from a dozen runs or hundreds, and retries."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import pytest

from seqera_core.sizing import Budget, UsageModel
from seqera_core.sizing._prior import Pool


def _trained(points: Sequence[tuple[int | None, float]], **options: float) -> UsageModel:
    model = UsageModel(**options)  # type: ignore[arg-type]
    for x, y in points:
        model.learn(x, y)
    return model


def test_no_run_no_opinion_and_too_few_runs_without_a_pipeline_fall_back() -> None:
    assert UsageModel().upper(10) is None
    model = _trained([(10, 100.0), (20, 120.0)], fallback_margin=1.25)
    assert model.upper(10) == pytest.approx(150.0)


def _pipeline(spreads: list[float], seed: int = 8) -> Pool:
    """A pipeline whose processes, 20 runs each, vary by ``spreads`` (log sd)."""
    rng = random.Random(seed)
    pool = Pool()
    for spread in spreads:
        other = UsageModel(pool=pool)
        for _ in range(20):
            other.learn(None, 1e9 * rng.lognormvariate(0, spread))
    return pool


@pytest.mark.parametrize(("spread", "least", "most"), [(0.01, 1.0, 1.08), (0.3, 1.5, 64.0)])
def test_a_process_with_few_runs_borrows_its_pipelines_dispersion(
    spread: float, least: float, most: float
) -> None:
    pool = _pipeline([spread * f for f in (0.8, 0.9, 1.0, 1.1, 1.2, 1.0)])
    model = UsageModel(pool=pool)
    for peak in (30e9, 30.1e9, 29.9e9):  # three runs of a new process: no fit yet
        model.learn(None, peak)
    bound = model.upper(None)
    assert bound is not None and least * 30.1e9 <= bound <= most * 30.1e9
    # a stratum borrows without lending: the pipeline's prior is unchanged by it
    prior = pool.prior()
    UsageModel(pool=pool, lends=False).learn(None, 5.0)
    assert pool.prior() == prior


def test_a_dozen_steady_runs_with_a_few_small_ones_keep_a_tight_bound() -> None:
    # nf-core/eager's bwa: 11.05 GB give or take 0.5 %, and now and then a tiny input that
    # peaks at a fraction of it; those say nothing of how far above 11.1 GB a run goes
    rng = random.Random(9)
    runs = [(10**9, 11.05e9 * rng.uniform(0.995, 1.005)) for _ in range(10)]
    model = _trained([*runs, (10**6, 2e9), (10**6, 3e9)])
    bound = model.upper(None)
    assert bound is not None and model.largest <= bound <= model.largest * 1.05


def test_a_dozen_steady_runs_get_a_margin_of_a_few_per_cent() -> None:
    # An aligner loading a fixed 30 GB index: a 20 % margin would waste 6 GB for hours.
    rng = random.Random(3)
    peaks = [30e9 * (1 + rng.uniform(-0.002, 0.002)) for _ in range(12)]
    model = _trained([(rng.randrange(10**9, 10**10), p) for p in peaks])
    bound = model.upper(5 * 10**9)
    assert bound is not None and max(peaks) <= bound <= max(peaks) * 1.03


def test_an_erratic_process_gets_a_wide_margin() -> None:
    rng = random.Random(4)
    peaks = [rng.lognormvariate(math.log(4e9), 0.3) for _ in range(12)]
    model = _trained([(None, p) for p in peaks])
    bound = model.upper(None)
    # past the largest of 12 by more than a steady process's few per cent, and missed by
    # no more of its new runs than the miss rate it was sized at (5 %)
    assert bound is not None and bound > max(peaks) * 1.05
    fresh = [rng.lognormvariate(math.log(4e9), 0.3) for _ in range(10_000)]
    assert sum(y > bound for y in fresh) <= 0.05 * len(fresh)


def test_follows_use_that_grows_with_input() -> None:
    rng = random.Random(5)
    runs = [(x, 2.0 * x * rng.uniform(0.98, 1.02)) for x in range(10**6, 3 * 10**8, 10**6)]
    rng.shuffle(runs)  # the window keeps the last 200: let them span the inputs
    model = _trained(runs)
    small = model.upper(2 * 10**7)
    assert small is not None and 4e7 <= small <= 6e7  # the largest use is 600 MB
    beyond = model.upper(10**9)  # larger than any input seen: at least the maximum
    assert beyond is not None and beyond >= model.largest


@pytest.mark.parametrize("spread", [0.05, 0.3])
def test_new_runs_stay_under_the_bound_about_as_often_as_promised(spread: float) -> None:
    rng = random.Random(6)

    def draw() -> tuple[int, float]:
        x = rng.randrange(10**8, 10**10)
        return x, 3.0 * x**0.5 * rng.lognormvariate(0, spread)

    model = _trained([draw() for _ in range(150)], alpha=0.01)
    fresh = [draw() for _ in range(1000)]
    misses = 0
    for x, y in fresh:
        bound = model.upper(x)
        misses += bound is not None and y > bound
    assert misses / len(fresh) <= 0.03


def test_a_retry_escalates_from_the_error_not_by_doubling() -> None:
    rng = random.Random(7)
    model = _trained([(None, 10e9 * rng.uniform(0.99, 1.01)) for _ in range(40)])
    first = model.upper(None)
    assert first is not None
    model.fail(None, first)
    assert model.failed_at(None) == first
    retry = model.retry(None, first)
    assert first * 1.05 <= retry <= first * 1.3
    # past every use seen: grown by the spread, never past the escalation
    far = model.retry(None, 50e9)
    assert 50e9 * 1.1 <= far <= 50e9 * 2


@pytest.mark.parametrize("spread", [0.05, 0.3])
def test_a_retry_is_rarely_killed_again(spread: float) -> None:
    # Past the bound a run passed, the errors' tail says how far it may be: the retry is
    # passed by at most alpha of the runs that passed the first bound.
    rng = random.Random(10)
    model = _trained([(None, 1e9 * rng.lognormvariate(0, spread)) for _ in range(40)])
    first = model.upper(None)
    assert first is not None
    retry = model.retry(None, first)
    fresh = [1e9 * rng.lognormvariate(0, spread) for _ in range(100_000)]
    missed = [y for y in fresh if y > first]
    assert sum(y > retry for y in missed) <= 0.05 * max(len(missed), 20)
    assert retry <= 2 * max(first, model.largest)


def test_a_kill_belongs_to_the_task_of_the_same_input() -> None:
    model = UsageModel()
    model.fail(100, 5.0)
    assert model.failed_at(100) == 5.0 and model.failed_at(200) == 0.0
    assert model.failed_at(None) == 5.0


def _jumping(jump: float, seed: int = 5) -> Pool:
    """A pipeline of ten steady processes, 20 runs each, whose last run was ``jump`` x."""
    rng = random.Random(seed)
    pool = Pool()
    for _ in range(10):
        other = UsageModel(pool=pool)
        for _ in range(19):
            other.learn(None, 1e9 * rng.uniform(0.998, 1.002))
        other.learn(None, 1e9 * jump)
    return pool


def test_a_steady_process_in_a_pipeline_whose_processes_jump_keeps_a_wider_margin() -> None:
    # nf-core/chipseq's TRIMGALORE: a dozen runs at 0.155 GB give or take 1 %, then 0.20
    # GB. Its own runs cannot tell; its pipeline's processes, each of which has passed
    # everything it had shown by a quarter, can: a new run is a record 1 time in 13 and
    # then lands as far past as theirs did.
    peaks = [(10**9 + i, 0.155e9 * (1 + (i % 5 - 2) / 400)) for i in range(12)]
    bounds = {}
    for jump in (1.0, 1.25):
        model = UsageModel(pool=_jumping(jump))
        for x, y in peaks:
            model.learn(x, y)
        bounds[jump] = model.upper(None)
    steady, jumpy = bounds[1.0], bounds[1.25]
    assert steady is not None and jumpy is not None
    assert steady < 0.155e9 * 1.05 < jumpy


def test_no_bound_is_closer_to_the_largest_use_than_the_resolution() -> None:
    # Identical peaks promise nothing finer than a peak is measured to: every candidate's
    # margin, and the bound of a process with few runs, is at least ``resolution``.
    peaks = [(10**9 + i, 4e9) for i in range(40)]
    for resolution in (0.005, 0.02, 0.1):
        model = _trained(peaks, resolution=resolution)
        # the model's own bound (its net, which has scored these runs, gives the maximum)
        bound = model.own(10**9)
        assert bound is not None
        assert bound == pytest.approx(4e9 * math.exp(resolution), rel=1e-9)


def test_no_premium_over_the_maximum_past_what_its_misses_are_expected_to_cost() -> None:
    # nf-core/eager's mtnucratio: peaks at 1.55-1.59 GB give or take a few small ones, in
    # a pipeline whose processes jump by a fifth; the model bought 36 % over the largest
    # use against a record, where the maximum misses 1 run in runs + 1 and a miss costs
    # it about escalation x the largest use: past that premium it wastes more, on average.
    rng = random.Random(3)
    peaks = [(10**9 + i, 1.59e9 * rng.uniform(0.97, 1.0)) for i in range(22)]
    peaks += [(10**9 + 22, 1.46e9), (10**9 + 23, 1.5e9)]
    for jump in (1.0, 1.25):
        bounds = []
        for net in (False, True):
            model = UsageModel(pool=_jumping(jump), net=net, escalation=2.0)
            for x, y in peaks:
                model.learn(x, y)
            bounds.append(model.own(10**9 + 5))
        free, capped = bounds
        assert free is not None and capped is not None
        cap = max(p for _, p in peaks) * max(math.exp(0.005), 1 + 2.0 / (len(peaks) + 1))
        assert capped == pytest.approx(min(free, cap), rel=1e-12)
        if jump > 1:
            assert free > cap  # the pipeline's jumps priced a premium the cap takes back
    # past the inputs seen, a fitted trend may ask for more: no cap there
    grows = [(2**k, 1e6 * 2**k) for k in range(10, 40)]
    model = _trained(grows)
    bound = model.own(2**45)
    assert bound is not None and bound > 1e6 * 2**39 * 2


def test_bad_settings_are_refused() -> None:
    for options in ({"alpha": 0.0}, {"retry_cost": -1.0}, {"min_runs": 2},
                    {"fallback_margin": 0.9}, {"escalation": 1.0}, {"resolution": -0.1},
                    {"resolution": 2.0}):  # fmt: skip
        with pytest.raises(ValueError, match="alpha must be"):
            UsageModel(**options)


def test_a_retry_with_only_kills_and_a_pipeline_to_borrow_from() -> None:
    # A process whose every attempt so far was killed: no use learned, but its pipeline
    # lends a prior. The retry steps up from the kill (escalation), no division by zero.
    pool = _pipeline([0.1, 0.2, 0.3])
    model = UsageModel(pool=pool, escalation=2.0)
    model.fail(10, 2e9)
    assert model.upper(10) is None
    assert model.retry(10, 2e9) == pytest.approx(4e9)
    # and once a run has finished, the bound of few runs takes over again
    model.learn(10, 3e9)
    assert model.retry(10, 2e9) >= 3e9


def test_an_input_past_those_seen_gets_the_fit_at_least_the_largest_use() -> None:
    # nf-core/eager's MarkDuplicates, a dozen runs of history (seed 5 of the 12/28
    # sample): 10-16 GB, and one retried JVM at 33.4. The calibrated maximum's margin
    # (twice the largest: a dozen runs promise little that far out) was priced on the
    # inputs seen; a 61.7 GB input got it and wasted 70 GB-h where the maximum wasted 24.
    runs = [(0.67, 9.76), (2.07, 12.43), (3.26, 14.58), (3.77, 14.28), (4.05, 14.79),
            (4.31, 16.35), (6.71, 33.41), (7.29, 14.57), (9.0, 14.54), (10.78, 11.37),
            (15.57, 15.48), (26.22, 15.48)]  # fmt: skip
    model = UsageModel()
    for x, peak in runs:
        model.learn(int(x * 1e9), peak * 1e9, weight=0.1)
    inside = model.upper(int(5e9))
    past = model.upper(int(61.7e9))
    assert inside is not None and past is not None
    assert model.largest <= past <= 1.5 * model.largest
    assert past <= 1.1 * inside


def test_a_kill_past_every_use_grows_by_a_records_gap_not_by_the_spread() -> None:
    # nf-core/eager's bwa: 11.05 GB give or take 0.5 %, and tiny inputs far below. A task
    # killed at the largest use is a new record; records of a use that barely moves land
    # barely past it, so its retry is 10 % more, not twice (the tiny inputs' spread).
    rng = random.Random(12)
    runs = [(10**9 + i, 11.05e9 * rng.uniform(0.995, 1.005)) for i in range(30)]
    model = _trained([*runs, (10**6, 4.9e9), (10**6, 5.2e9), (10**6, 8e9)])
    retry = model.retry(2 * 10**9, model.largest)
    assert model.largest * 1.1 <= retry <= model.largest * 1.15


def test_a_second_kill_of_the_same_task_escalates() -> None:
    rng = random.Random(13)
    model = _trained([(10**9 + i, 11.05e9 * rng.uniform(0.995, 1.005)) for i in range(30)])
    first = model.retry(5, model.largest)
    model.fail(5, model.largest)
    model.fail(5, first)
    # its records said 10 %; it passed them: they are no guide to this task
    assert model.retry(5, first) == pytest.approx(first * model.escalation)
    assert model.retry(6, first) < first * 1.2  # another task is not that one


def test_a_run_past_what_it_was_given_is_learned_at_once() -> None:
    rng = random.Random(14)
    # at a miss rate of 1 in 200 a bound past all 65 runs: it must cover the new one
    model = _trained([(None, 1e9 * rng.uniform(0.99, 1.01)) for _ in range(64)], alpha=0.005)
    before = model.upper(None)
    assert before is not None and before < 1.2e9
    model.learn(None, 1.6e9, attempt=2)  # a retry that held: the next task knows
    after = model.upper(None)
    assert after is not None and after >= 1.6e9


def test_a_process_that_spreads_is_not_held_to_its_pipelines_small_gaps() -> None:
    # a network-analysis step of one traced pipeline: a dozen runs at 65 or 107 MB, in a
    # pipeline of steady processes whose records passed their last by a fraction of a per
    # cent. Their gaps say how often a record comes, not how far this process's goes:
    # past them its own errors' tail runs on, so its margin is not a couple per cent.
    peaks = [(10**7, 1e6 * (107 if i % 4 == 0 else 65 + i % 3)) for i in range(12)]
    # a retry is priced at what a typical task of the pipeline uses: far more than these
    budget = Budget()
    budget.add(16e9)
    model = UsageModel(pool=_pipeline([0.001, 0.002, 0.004, 0.008, 0.003]), budget=budget)
    for x, y in peaks:
        model.learn(x, y)
    bound = model.upper(10**7)
    assert bound is not None and bound > 1.1 * model.largest


def test_a_window_recalled_at_once_is_the_window_recalled_run_by_run() -> None:
    """What a process's load refills its models with (made once, shared with a stratum that
    holds all of its runs) is what recalling each run gives: the same runs, the same
    answers, inside, above and below the inputs seen, and without an input size."""
    rng = random.Random(3)
    rows = [(rng.choice([None, 0, 10**6, 10**9, rng.randrange(1, 10**10)]),
             rng.choice([0.0, 1e9 * rng.lognormvariate(0, 0.3)]), rng.uniform(1, 600),
             rng.choice([None, 8e9]), rng.choice([1, 1, 2]))
            for _ in range(260)]  # fmt: skip
    one_by_one, at_once = UsageModel(), UsageModel()
    for model in (one_by_one, at_once):
        model.resume(300, 4e9, (300, 20.5, 30.0, math.log(4e9), 21.0))
    for x, usage, weight, allocation, attempt in rows:
        one_by_one.recall(x, usage, weight=weight, allocation=allocation, attempt=attempt)
    runs = UsageModel.recalled(rows)
    at_once.recall_runs(runs)
    assert list(at_once._window) == list(one_by_one._window)
    assert all(r.key == (math.log(max(r.input_bytes, 1)) if r.input_bytes else None)
               for r in runs)  # fmt: skip
    for x in (None, 1, 10**6, 5 * 10**9, 10**12):
        assert at_once.upper(x) == one_by_one.upper(x)
