"""Validation: queue choice by cost, each message, and effective values within the queue."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seqera_core import Accelerator, ResourceLimits, ResourceRequest
from seqera_core.platforms import Platform, load, parse
from seqera_core.platforms._validation import validate

GIB = 2**30
HOUR = 3600
PLATFORMS = Path(__file__).parents[3] / "shared" / "platforms"
SLURM = load(PLATFORMS / "slurm-cluster.yaml")
ECS = load(PLATFORMS / "ecs-account.yaml")
PBS = load(PLATFORMS / "pbs-cluster.yaml")


def platform(queues: dict[str, Any], **more: Any) -> Platform:
    return parse({"name": "site", "scheduler": "slurm", "queues": queues, **more})


def test_cheapest_instance_type_that_fits() -> None:
    report = validate(ECS, ResourceRequest(cpus=4, memory=32 * GIB, time=2 * HOUR))
    assert report.queue == "m7i.4xlarge"
    assert report.hourly_cost == pytest.approx(0.8064)
    assert report.estimated_cost == pytest.approx(2 * 0.8064)
    assert report.suggestions == (
        "queue m7i.4xlarge is the cheapest that fits "
        "(also fit: r7i.4xlarge, c7i.8xlarge, g5.2xlarge)",
    )
    assert validate(ECS, ResourceRequest(memory=100 * GIB)).queue == "r7i.4xlarge"


def test_queue_specific_rates_override_the_platform_rates() -> None:
    report = validate(PBS, ResourceRequest(cpus=4, memory=8 * GIB, time=HOUR // 2))
    # express costs 0.05/core, 0.01/GiB; workq the defaults 0.025/core, 0.005/GiB
    assert report.queue == "workq" and report.hourly_cost == pytest.approx(4 * 0.025 + 8 * 0.005)


def test_a_cost_tie_goes_to_the_default_then_to_the_first_listed() -> None:
    queues = {"a": {}, "b": {}, "c": {}}
    assert validate(platform(queues, default_queue="b"), ResourceRequest()).queue == "b"
    assert validate(platform(queues), ResourceRequest()).queue == "a"


def test_a_queue_that_needs_no_capping_is_preferred_over_a_cheaper_one() -> None:
    site = platform(
        {"cheap": {"max_memory": "10 GiB"}, "roomy": {"max_memory": "20 GiB"}},
        multipliers={"memory": "+10%"},
        cost={"gib_hour": 1},
    )
    report = validate(site, ResourceRequest(memory=10 * GIB))
    assert report.queue == "roomy" and report.request.memory == 11 * GIB
    assert report.suggestions == (
        "queue roomy is the cheapest that fits without capping the multiplied values "
        "(also fit: cheap)",
    )


def test_a_multiplier_never_pushes_past_the_queue_limit() -> None:
    site = platform({"only": {"max_memory": "10 GiB", "max_cpus": 4}},
                    multipliers={"memory": 1.5, "cpus": 1.5})  # fmt: skip
    report = validate(site, ResourceRequest(cpus=4, memory=8 * GIB))
    assert report.ok and report.request.memory == 10 * GIB and report.request.cpus == 4
    assert "memory 12 GiB capped to the queue only limit 10 GiB after the platform " \
        "multiplier" in report.warnings  # fmt: skip
    assert "cpus 6 capped to the queue only limit 4 after the platform multiplier" in (
        report.warnings
    )


def test_the_default_queue_is_used_even_when_not_automatic() -> None:
    site = platform({"big": {"auto": False}, "main": {"auto": False}}, default_queue="main")
    assert validate(site, ResourceRequest(cpus=2)).queue == "main"


def test_no_automatic_queue_at_all() -> None:
    site = platform({"a": {"auto": False, "max_cpus": 2}, "b": {"auto": False}})
    report = validate(site, ResourceRequest(cpus=4))
    assert report.errors == (
        "no queue of site is chosen automatically (every one has auto: false and there is "
        "no default_queue): the job must name its queue",
    )
    assert report.suggestions == ("queue b fits: ask for it by name",)


def test_values_no_single_queue_allows_together() -> None:
    site = platform({"gpu": {"max_gpus": 4, "max_walltime": "2d"}, "long": {"max_gpus": 0}})
    report = validate(site, ResourceRequest(accelerator=Accelerator(2), time=5 * 86400))
    assert report.errors == ("no queue of site allows time 5d, gpus 2 together",)
    assert report.suggestions == ("queue gpu's time limit is 2d", "queue long's gpus limit is 0")


def test_an_error_on_the_default_queue_suggests_partial_fits_too() -> None:
    report = validate(SLURM, ResourceRequest(accelerator=Accelerator(2), time=5 * 86400))
    assert report.errors == ("gpus 2 exceeds queue normal (0)",)
    assert report.suggestions == ("queue gpu allows 4 for gpus, but its time limit is 2d",)


def test_a_named_queue_too_small_suggests_a_queue_that_fits() -> None:
    report = validate(SLURM, ResourceRequest(memory=600 * GIB, queue="normal", time=HOUR))
    assert report.errors == ("memory 600 GiB exceeds queue normal (512 GiB)",)
    assert report.suggestions == ("queue hugemem allows 1.5 TiB for memory: ask for it by name",)
    assert report.queue is None and report.hourly_cost is None


def test_an_unlimited_queue_is_named_as_such() -> None:
    site = platform({"small": {"max_cpus": 2}, "any": {"auto": False}}, default_queue="small")
    report = validate(site, ResourceRequest(cpus=8))
    assert report.errors == ("cpus 8 exceeds queue small (2)",)
    assert report.suggestions == ("queue any has no cpus limit: ask for it by name",)


def test_exceeding_every_queue_names_the_largest_limit() -> None:
    report = validate(SLURM, ResourceRequest(cpus=500, time=HOUR))
    assert report.errors == (
        "cpus 500 exceeds every queue of example-hpc (the largest, normal, allows 128)",
    )
    assert report.suggestions == ()


def test_crowding_and_missing_time_warnings() -> None:
    report = validate(SLURM, ResourceRequest(cpus=30, memory=GIB))
    assert report.queue == "short" and report.estimated_cost is None
    assert report.warnings == (
        "cpus 30 is 94% of queue short's limit (32): it needs a nearly idle node and may "
        "wait long to start",
        "no time given: queue short's limit 4h applies; a shorter time lets the scheduler "
        "start the job sooner (backfill)",
    )


def test_a_resource_limit_is_applied_before_choosing() -> None:
    limits = ResourceLimits(memory=100 * GIB)
    report = validate(SLURM, ResourceRequest(memory=600 * GIB, resource_limits=limits, time=60))
    assert report.ok and report.queue == "short" and report.request.memory == 100 * GIB
    assert "memory 600 GiB capped to the resource limit 100 GiB" in report.warnings


def test_the_request_is_kept_apart_from_the_report() -> None:
    request = ResourceRequest(cpus=2, time=HOUR)
    report = validate(SLURM, request)
    assert request.queue is None and report.request.queue == "short"
    assert report.request.cpus == 2 and report.request.time == HOUR


sizes = st.one_of(st.none(), st.integers(1, 3 * 1024 * GIB))
cpus = st.one_of(st.none(), st.integers(1, 300))
times = st.one_of(st.none(), st.integers(1, 40 * 86400))
factors = st.sampled_from([1, 1.1, 1.5, 2, "+25%"])


@given(cpus, sizes, times, factors, factors, st.sampled_from([None, "short", "hugemem"]))
def test_effective_values_never_exceed_the_chosen_queue(
    c: int | None, m: int | None, t: int | None, fm: Any, fc: Any, queue: str | None
) -> None:
    site = parse({"scheduler": "slurm", "default_queue": "normal",
                  "multipliers": {"memory": fm, "cpus": fc, "time": fm},
                  "queues": {
                      "short": {"max_cpus": 32, "max_memory": "128 GiB", "max_walltime": "4h"},
                      "normal": {"max_cpus": 128, "max_memory": "512 GiB", "max_walltime": "7d"},
                      "hugemem": {"max_memory": "1.5 TiB", "auto": False},
                  }})  # fmt: skip
    request = ResourceRequest(cpus=c, memory=m, time=t, queue=queue)
    report = validate(site, request)
    if not report.ok:
        assert report.queue is None and report.errors
        return
    chosen = site.queue(report.queue or "")
    assert chosen is not None and report.request.queue == chosen.name
    effective = report.request
    for value, limit in (
        (effective.cpus, chosen.max_cpus),
        (effective.memory, chosen.max_memory),
        (effective.time, chosen.max_walltime),
    ):
        assert value is None or limit is None or value <= limit
    for value, asked in ((effective.cpus, c), (effective.memory, m), (effective.time, t)):
        assert (value is None) == (asked is None)  # nothing invented, nothing dropped


def test_public_names() -> None:
    from seqera_core import platforms
    from seqera_core.platforms import _validation as validation

    assert validation.__all__ == ["ValidationReport", "validate"]
    assert platforms.validate is validate and "validate" in platforms.__all__
    for module in (platforms, validation):
        assert all(hasattr(module, name) for name in module.__all__)
