"""The routing rule: constraints refuse with a reason, the objective picks, the list
scheduler estimates when a job starts."""

from __future__ import annotations

import pytest

from seqera_core.backends.route import (
    Limits,
    Load,
    Option,
    Unroutable,
    choose,
    refusal,
    saved_rate,
    start_after,
)
from seqera_core.errors import UsageError
from seqera_core.models import Accelerator, ResourceRequest
from seqera_core.units import GIB


def test_refusal_names_the_constraint() -> None:
    node = Limits(cpus=16, memory=64 * GIB, walltime=3600, gpus=0, queues=("debug", "main"))
    assert refusal(node, ResourceRequest(cpus=8, memory=GIB, time=60), staged=False) is None
    assert "40 cores asked, its largest node has 16" in str(
        refusal(node, ResourceRequest(cpus=40), staged=False)
    )
    assert "128 GiB asked" in str(refusal(node, ResourceRequest(memory=128 * GIB), staged=False))
    assert "7200 s asked, its time limit is 3600 s" in str(
        refusal(node, ResourceRequest(time=7200), staged=False)
    )
    gpu = ResourceRequest(accelerator=Accelerator(count=1))
    assert "1 GPUs asked, it has none" in str(refusal(node, gpu, staged=False))
    assert refusal(Limits(gpus=None), gpu, staged=False) is None  # none known: not refused
    assert "no queue 'big'" in str(refusal(node, ResourceRequest(queue="big"), staged=False))
    assert "has no queue" in str(refusal(Limits(), ResourceRequest(queue="main"), staged=False))


def test_a_backend_without_the_shared_files_takes_only_staged_jobs() -> None:
    cloud = Limits(gpus=None, shared_fs=False)
    assert "does not stage" in str(refusal(cloud, ResourceRequest(), staged=False))
    assert refusal(cloud, ResourceRequest(), staged=True) is None
    assert refusal(Limits(down="sinfo did not answer"), ResourceRequest(), staged=True) == (
        "sinfo did not answer"
    )


def test_start_now_when_cores_are_free() -> None:
    assert start_after(Load(free=4, overhead=0.5), 2) == 0.5


def test_start_waits_for_releases_in_time_order() -> None:
    load = Load(free=1, releases=[(30, 1), (10, 2)])
    assert start_after(load, 2) == 10  # 1 free + 2 released at 10 s
    assert start_after(load, 4) == 30


def test_queued_jobs_take_released_cores_first() -> None:
    # two cores, both busy for 10 s; a queued 2-core job of 50 s goes first
    load = Load(free=0, releases=[(10, 2)], queued=[(2, 50)])
    assert start_after(load, 1) == 60
    # the scheduler's own expected start bounds it from below
    assert start_after(Load(free=8, not_before=120), 1) == 120


def test_a_job_wider_than_ever_free_never_starts() -> None:
    assert start_after(Load(free=2, releases=[(5, 2)]), 8) == float("inf")
    # a queued job that never fits does not hold the others back
    assert start_after(Load(free=2, queued=[(8, 100)]), 1) == 0


def test_finish_objective_picks_the_earliest_end_and_says_why() -> None:
    local = Option("local", start=40, runtime=60)
    slurm = Option("slurm", start=5, runtime=60, cost=0.2)
    choice = choose([local, slurm], "finish")
    assert choice.backend == "slurm"
    assert choice.reason == "finish: slurm finish in 65 s (local 100 s)"


def test_cost_objective_picks_the_cheapest() -> None:
    local = Option("local", start=400, runtime=60, cost=0.0)
    slurm = Option("slurm", start=5, runtime=60, cost=0.2)
    assert choose([local, slurm], "cost").backend == "local"


def test_refused_options_are_never_chosen_and_all_refused_names_each() -> None:
    options = [Option("local", "8 GPUs asked, it has none"), Option("slurm", start=999)]
    choice = choose(options, "finish")
    assert choice.backend == "slurm"
    assert "local cannot: 8 GPUs asked" in choice.reason
    with pytest.raises(Unroutable) as caught:
        choose([Option("local", "no GPU"), Option("slurm", "no partition 'gpu'")], "finish")
    assert str(caught.value) == "no backend can run it: local: no GPU; slurm: no partition 'gpu'"
    assert isinstance(caught.value, UsageError)  # exit 2 on a command line


def test_cost_per_hour_saved_pays_for_time_only_under_the_ceiling() -> None:
    # the cluster: free, ends in 2 h; the cloud: 0.5 more, ends in 1 h 45 min
    slurm = Option("slurm", start=1800, runtime=5400, cost=0.0)
    cloud = Option("ecs", start=60, runtime=6240, cost=0.5)
    assert slurm.finish - cloud.finish == 900  # a quarter of an hour saved
    assert saved_rate(cloud, slurm) == pytest.approx(2.0)  # 0.5 for 0.25 h
    chosen = choose([slurm, cloud], "cost-per-hour-saved", 2.5)
    assert chosen.backend == "ecs"
    assert chosen.reason == (
        "cost-per-hour-saved: ecs 0.5 more than slurm to finish 900 s sooner, "
        "2 per hour saved (at most 2.5) (slurm 0, 7.2e+03 s)"
    )
    kept = choose([slurm, cloud], "cost-per-hour-saved", 1.5)
    assert kept.backend == "slurm"
    assert kept.reason == (
        "cost-per-hour-saved: slurm cheapest at 0, finish in 7.2e+03 s "
        "(ecs 0.5, 6.3e+03 s, 2 per hour saved)"
    )
    assert choose([slurm, cloud], "cost-per-hour-saved", 2.0).backend == "ecs"  # at most


def test_cost_per_hour_saved_takes_the_fastest_worth_its_price() -> None:
    cheap = Option("local", start=3600, runtime=3600, cost=0.0)  # ends in 2 h
    mid = Option("slurm", start=0, runtime=3600, cost=1.0)  # 1 h sooner for 1.0
    fast = Option("ecs", start=0, runtime=1800, cost=4.0)  # 1.5 h sooner for 4.0: 2.67/h
    assert choose([cheap, mid, fast], "cost-per-hour-saved", 2.0).backend == "slurm"
    assert choose([cheap, mid, fast], "cost-per-hour-saved", 3.0).backend == "ecs"
    assert choose([cheap, mid, fast], "cost-per-hour-saved", 0.5).backend == "local"
    # a costlier backend that saves nothing is never worth it, at any ceiling
    slower = Option("ecs", start=7200, runtime=3600, cost=0.1)
    assert saved_rate(slower, cheap) == float("inf")
    assert choose([cheap, slower], "cost-per-hour-saved", 1e9).backend == "local"
    # the cheapest never starting: anything that does saves unbounded time
    never = Option("slurm", start=float("inf"), runtime=60, cost=0.0)
    assert choose([never, fast], "cost-per-hour-saved", 0.0).backend == "ecs"
    # as cheap and sooner: no extra cost, so no ceiling needed beyond 0
    same = Option("ecs", start=0, runtime=60, cost=0.0)
    assert choose([cheap, same], "cost-per-hour-saved", 0.0).backend == "ecs"


def test_cost_per_hour_saved_needs_its_ceiling() -> None:
    with pytest.raises(UsageError, match=r"route\.max_cost_per_hour_saved: not set"):
        choose([Option("local")], "cost-per-hour-saved")
