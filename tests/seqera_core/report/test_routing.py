"""What routing saved: the estimate on numbers worked out by hand."""

from __future__ import annotations

import math

import pytest

from seqera_core.platforms import CostRates
from seqera_core.report._routing import (
    Alternative,
    Task,
    capacity,
    estimate,
    schedule,
    waits,
)

WIDE = "4 cores asked, its largest node has 2"
# 3.6 per core-hour: 0.001 a core-second
CLUSTER = CostRates(core_hour=3.6)


def test_waits_are_the_least_start_the_router_expected() -> None:
    tasks = [
        Task("r", "local", 0, 10, wait={"local": 0.5, "slurm": 5}),
        Task("r", "local", 0, 10, wait={"local": 30, "slurm": 3}),  # local busy then
        Task("r", "slurm", 0, 20, wait={"slurm": -1, "ecs": math.inf}),  # never below 0
    ]
    assert waits(tasks) == {"local": 0.5, "slurm": 0.0}


def test_capacity_is_the_most_cores_held_at_once() -> None:
    tasks = [
        Task("r", "local", 0, 10, cpus=1), Task("r", "local", 5, 10, cpus=2),
        Task("r", "local", 15, 1, cpus=4),  # starts as the first two end: cores handed over
        Task("r", "slurm", 0, 1, cpus=8),
    ]  # fmt: skip
    assert capacity(tasks) == {"local": 4.0, "slurm": 8.0}


def test_schedule_is_first_come_first_served_on_the_cores() -> None:
    # two 1-core tasks fill 2 cores; the 2-core one waits for both, the last for it
    ready = [(0.0, 1.0, 10.0), (0.0, 1.0, 10.0), (0.5, 2.0, 10.0), (1.0, 1.0, 1.0)]
    assert schedule(ready, 2.0) == 21.0
    assert schedule(ready, None) == 10.5  # never full: each starts when ready
    assert schedule(ready, 4.0) == 11.0  # the last waits for a short one's core
    assert schedule(ready, 5.0) == 10.5
    # no backfill: the 1-core task behind the wide one waits for it to start
    assert schedule([(0, 1, 10), (1, 2, 1), (2, 1, 1)], 2.0) == 12.0


def test_a_backend_that_cannot_run_a_task_is_no_alternative() -> None:
    tasks = [
        Task("r", "local", 100, 10, wait={"local": 0.5, "slurm": 5}),
        Task("r", "local", 100, 10, wait={"local": 0.5, "slurm": 5}),
        Task("r", "slurm", 105, 20, cpus=4, wait={"slurm": 5}, refused={"local": WIDE}),
    ]
    saving = estimate(tasks, {"slurm": CLUSTER})
    assert saving is not None
    # waits: local 0.5, slurm 5; submitted at 99.5, 99.5, 100; the last end 125
    assert saving.finish == pytest.approx(25.5)
    assert saving.cost == pytest.approx(4 * 20 * 0.001)  # local has no rates: free
    local, slurm = saving.alternatives
    assert local == Alternative("local", 1, WIDE, None, None, 2.0, 0.5)
    # all on slurm (4 cores): the two short ones at 104.5, the wide one waits for both to
    # end at 114.5 and ends at 134.5: 35 s from the first submission
    assert slurm.finish == pytest.approx(35.0)
    assert slurm.cost == pytest.approx(0.01 + 0.01 + 0.08)
    assert (slurm.cores, slurm.wait) == (4.0, 5.0)
    assert (saving.fastest, saving.cheapest) == ("slurm", "slurm")
    assert saving.time_saved == pytest.approx(9.5)
    assert saving.cost_saved == pytest.approx(0.02)


def test_a_small_machine_given_everything_queues_it() -> None:
    tasks = [
        Task("r", "local", 0, 10, wait={"local": 0.5, "slurm": 5}),
        Task("r", "local", 0, 10, wait={"local": 0.5, "slurm": 5}),
        # sent to the cluster while the machine was full
        Task("r", "slurm", 2, 10, cpus=2, wait={"slurm": 2, "local": 10.5}),
    ]
    saving = estimate(tasks, {})
    assert saving is not None
    assert saving.finish == pytest.approx(12.5)  # from -0.5 (submitted) to 12
    local, slurm = saving.alternatives
    # local, 2 cores: both short at 0, the 2-core one waits until 10, ends at 20
    assert local.finish == pytest.approx(20.5)
    # slurm, 2 cores, 2 s wait: the short ones at 1.5, the wide one at 11.5, ends 21.5
    assert slurm.finish == pytest.approx(22.0)
    assert (saving.fastest, saving.time_saved) == ("local", pytest.approx(8.0))
    # no backend has rates: nothing is priced
    assert saving.cost is None and saving.cheapest is None and saving.cost_saved is None
    assert local.cost is None and slurm.cost is None


def test_a_candidate_that_ran_nothing_is_never_full_and_runs_are_summed() -> None:
    tasks = [
        Task("a", "local", 0, 10, wait={"local": 0.3, "ecs": 60}),
        Task("a", "slurm", 0, 10, wait={"slurm": 5, "ecs": 60}),
        Task("b", "local", 1000, 4, wait={"local": 0.3, "ecs": 60}),
    ]
    saving = estimate(tasks, {"ecs": CostRates(core_hour=36.0)})
    assert saving is not None
    # run a: from -5 (slurm's submission) to 10; run b: from 999.7 to 1004
    assert saving.finish == pytest.approx(15 + 4.3)
    ecs = next(a for a in saving.alternatives if a.backend == "ecs")
    assert ecs.cores is None and ecs.wait == 60.0
    # run a: ready at -0.3 + 60 and -5 + 60, ends 69.7; from -5: 74.7; run b: from 999.7,
    # ready 1059.7, ends 1063.7: 64
    assert ecs.finish == pytest.approx(74.7 + 64.0)
    assert ecs.cost == pytest.approx((10 + 10 + 4) * 0.01)
    assert saving.cost == 0.0  # routed: nothing ran where it costs
    assert saving.cheapest in ("local", "slurm") and saving.cost_saved == 0.0


def test_every_figure_is_finite_and_none_without_tasks() -> None:
    assert estimate([], {}) is None
    saving = estimate([Task("r", "local", 0, 1, wait={"local": math.inf})], {})
    assert saving is not None
    assert all(math.isfinite(v) for v in (saving.finish, saving.alternatives[0].finish or 0))
