"""The resolver chain: priority, discovery, fallback on failure, caps."""

from __future__ import annotations

import logging
import threading

import pytest

from seqera_core import ResourceLimits, ResourceRequest, ResourceResponse
from seqera_core.resolvers import DefaultResolver, Resolver, discover, resolve
from tests.conftest import require

GIB = 2**30
DEFAULTS = ResourceResponse(cpus=1, memory=GIB, disk=10 * GIB, time=3600)


class Fixed(Resolver):
    def __init__(self, name: str, priority: int, answer: object) -> None:
        self.name, self.priority, self.answer = name, priority, answer

    def resolve(self, request: ResourceRequest) -> ResourceResponse | None:
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer  # type: ignore[return-value]


class Hanging(Resolver):
    name = "hanging"

    def __init__(self) -> None:
        self.release = threading.Event()

    def resolve(self, request: ResourceRequest) -> None:
        self.release.wait(10)


REQUEST = ResourceRequest(cpus=2, memory=4 * GIB, process="ALIGN", task_index=3, attempt=2)


def test_lowest_priority_wins_and_declared_is_kept() -> None:
    low = Fixed("low", -10, ResourceResponse(cpus=4, memory=GIB, disk=GIB, time=60))
    high = Fixed("high", 5, ResourceResponse(cpus=8, memory=GIB, disk=GIB, time=60))
    result = resolve(REQUEST, [high, DefaultResolver(), low], defaults=DEFAULTS)
    assert result.resolver == "low" and result.effective.cpus == 4
    assert result.declared is REQUEST


def test_no_opinion_falls_through_to_declared_plus_defaults() -> None:
    result = resolve(REQUEST, [Fixed("none", 0, None), DefaultResolver()], defaults=DEFAULTS)
    assert result.resolver == "declared"
    assert result.effective == ResourceResponse(cpus=2, memory=4 * GIB, disk=10 * GIB, time=3600)


@pytest.mark.parametrize(
    "answer",
    [
        RuntimeError("boom"),
        "lots of memory",
        {"cpus": 1},
        ResourceResponse.__new__(ResourceResponse),  # attributes never set
    ],
)
def test_failure_or_garbage_warns_once_and_uses_declared(
    caplog: pytest.LogCaptureFixture, answer: object
) -> None:
    if isinstance(answer, ResourceResponse):
        object.__setattr__(answer, "cpus", -1)
        for name in ("memory", "disk", "time"):
            object.__setattr__(answer, name, 1)
    with caplog.at_level(logging.WARNING):
        result = resolve(REQUEST, [Fixed("bad", 0, answer)], defaults=DEFAULTS)
    assert result.resolver == "declared" and result.effective.memory == 4 * GIB
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert "bad" in warnings[0] and "ALIGN #3 (attempt 2)" in warnings[0]


def test_a_hanging_resolver_is_bounded_by_the_timeout(caplog: pytest.LogCaptureFixture) -> None:
    hanging = Hanging()
    try:
        with caplog.at_level(logging.WARNING):
            result = resolve(REQUEST, [hanging], defaults=DEFAULTS, timeout=0.2)
    finally:
        hanging.release.set()
    assert result.resolver == "declared"
    assert "timed out" in caplog.records[0].getMessage()


def test_caps_by_resource_limits_then_queue() -> None:
    big = Fixed("big", 0, ResourceResponse(cpus=64, memory=64 * GIB, disk=GIB, time=10**6))
    request = ResourceRequest(memory=GIB, resource_limits=ResourceLimits(memory=32 * GIB))
    result = resolve(
        request, [big], defaults=DEFAULTS, caps=ResourceLimits(cpus=16, memory=16 * GIB)
    )
    assert (result.effective.cpus, result.effective.memory) == (16, 16 * GIB)
    assert result.notes == (
        "memory 64 GiB capped to the resource limit 32 GiB",
        "cpus 64 capped to the queue limit 16",
        "memory 32 GiB capped to the queue limit 16 GiB",
    )


def test_discovery_from_an_installed_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    require("seqera_test_resolver", "the test plugin package is installed by the core session")
    assert [r.name for r in discover()] == ["default"]  # the plugin's enabled() says no
    monkeypatch.setenv("SEQERA_TEST_RESOLVER", "1")
    found = discover()
    names = [r.name for r in found]
    # the broken entry point is skipped, the disabled one left out, the default is last
    assert names == ["doubling", "default"]
    result = resolve(REQUEST, found, defaults=DEFAULTS)
    assert result.resolver == "doubling" and result.effective.memory == 8 * GIB
