"""The common request and response: validation, immutability, limits."""

from __future__ import annotations

import attrs
import pytest

from seqera_core import (
    Accelerator,
    ResourceError,
    ResourceLimits,
    ResourceRequest,
    ResourceResponse,
    apply_limits,
)

GIB = 2**30


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"cpus": -1}, "cpus"),
        ({"cpus": 0}, "cpus"),
        ({"cpus": float("nan")}, "cpus"),
        ({"cpus": True}, "cpus"),
        ({"memory": 0}, "memory"),
        ({"memory": 1.5}, "memory"),
        ({"time": -60}, "time"),
        ({"attempt": 0}, "attempt"),
    ],
)
def test_invalid_values_name_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ResourceError) as info:
        ResourceRequest(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field


def test_requests_are_immutable_and_hashable() -> None:
    request = ResourceRequest(cpus=2.0, memory=GIB, labels={"a": 1})
    assert request.cpus == 2 and isinstance(request.cpus, int)
    assert request.labels == {"a": "1"}
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        request.cpus = 3  # type: ignore[misc]
    assert hash(request) == hash(ResourceRequest(cpus=2, memory=GIB))


def test_response_requires_every_value() -> None:
    with pytest.raises(TypeError):
        ResourceResponse(cpus=1, memory=GIB, disk=GIB)  # type: ignore[call-arg]


def test_limits_cap_and_report() -> None:
    request = ResourceRequest(
        cpus=8,
        memory=16 * GIB,
        time=7200,
        accelerator=Accelerator(1),
        resource_limits=ResourceLimits(cpus=4, memory=8 * GIB, time=3600 * 3),
    )
    capped = apply_limits(request)
    assert (capped.request.cpus, capped.request.memory, capped.request.time) == (4, 8 * GIB, 7200)
    assert capped.notes == (
        "cpus 8 capped to the resource limit 4",
        "memory 16 GiB capped to the resource limit 8 GiB",
    )


def test_no_limits_no_notes() -> None:
    request = ResourceRequest(cpus=8)
    assert apply_limits(request).request is request
    assert apply_limits(request).notes == ()
