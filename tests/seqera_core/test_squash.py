"""The squash policy: parsing from a platform definition, and which jobs may go together."""

from __future__ import annotations

import pytest

from seqera_core.errors import ResourceError
from seqera_core.models import ResourceRequest
from seqera_core.platforms import parse
from seqera_core.squash import SquashMode, SquashPolicy, array_key, share_key

PLATFORM = {"scheduler": "slurm", "queues": {"main": {"max_cpus": 2}}}


def test_default_is_off() -> None:
    policy = parse(PLATFORM).squash
    assert policy.mode is SquashMode.OFF and not policy.arrays


def test_from_platform_definition() -> None:
    platform = parse(
        {**PLATFORM, "squash": {"mode": "squash", "max_jobs": 20.0, "max_time": "2h", "cpus": 2}}
    )
    assert platform.squash == SquashPolicy(SquashMode.SQUASH, 20, 7200, 2)
    assert platform.squash.arrays


def test_bare_mode_string() -> None:
    assert SquashPolicy.parse("Array").mode is SquashMode.ARRAY


@pytest.mark.parametrize(
    ("value", "field", "expected"),
    [
        ({"mode": "pack"}, "squash.mode", "off, array, squash"),
        ({"max_jobs": 0}, "squash.max_jobs", ">= 1"),
        ({"max_jobs": 2.5}, "squash.max_jobs", "whole number"),
        ({"max_time": "30"}, "squash.max_time", "ambiguous"),
        ({"max_time": 3600}, "squash.max_time", "a bare number is ambiguous"),
        ({"max_time": "10s"}, "squash.max_time", ">= 60"),
        ({"cpus": -1}, "squash.cpus", ">= 1"),
        ({"cpus": "9" * 5000}, "squash.cpus", "at most"),  # quoted: int() would raise
        ({"max_jobs": "9" * 20}, "squash.max_jobs", "at most"),
        ({"jobs": 3}, "squash.jobs", "max_jobs"),
        ({"key": 3}, "squash.key", "label"),
        (7, "squash", "mapping"),
    ],
)
def test_bad_policy_names_field_and_value(value: object, field: str, expected: str) -> None:
    with pytest.raises(ResourceError) as caught:
        parse({**PLATFORM, "squash": value}, "site.yaml")
    assert caught.value.field == f"site.yaml: {field}"
    assert expected in caught.value.expected


def test_keys_keep_unrelated_jobs_apart() -> None:
    policy = SquashPolicy("squash")
    small = ResourceRequest(cpus=1, memory=2**28, time=60, queue="main", account="lab")
    assert share_key(small, {}, policy) == share_key(
        ResourceRequest(cpus=2, memory=2**30, time=600, queue="main", account="lab"), {}, policy
    )
    for other in (
        ResourceRequest(cpus=1, memory=2**28, time=60, queue="long", account="lab"),
        ResourceRequest(cpus=1, memory=2**28, time=60, queue="main", account="other"),
        ResourceRequest(cpus=1, memory=2**28, time=60, queue="main", container="ubuntu"),
        ResourceRequest(cpus=1, memory=2**28, time=60, queue="main", account="lab",
                        extra={"slurm.qos": "high"}),
    ):  # fmt: skip
        assert share_key(other, {}, policy) != share_key(small, {}, policy)
    assert share_key(small, {"squash_key": "a"}, policy) != share_key(
        small, {"squash_key": "b"}, policy
    )
    assert array_key(small, {}, policy) != array_key(
        ResourceRequest(cpus=1, memory=2**29, time=60, queue="main", account="lab"), {}, policy
    )
