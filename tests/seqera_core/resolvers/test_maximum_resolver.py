"""The per-process-maximum resolver, alone and in the chain."""

from __future__ import annotations

import math

import pytest

from seqera_core.history import TaskRecord, open_history
from seqera_core.models import ResourceLimits, ResourceRequest
from seqera_core.pipeline import DEFAULTS
from seqera_core.resolvers import MaximumResolver, resolve
from seqera_core.units import GIB, MIB


@pytest.fixture
def resolver() -> MaximumResolver:
    history = open_history(":memory:")
    history.record([
        TaskRecord("r", str(i), "ALIGN", True, peak_memory=peak, cpu_percent=cpu, realtime=real)
        for i, (peak, cpu, real) in enumerate([(1 * GIB, 95.0, 100.0), (2 * GIB, 180.0, 50.0)])
    ])  # fmt: skip
    return MaximumResolver(history, margin=1.25)


def test_largest_use_plus_margin(resolver: MaximumResolver) -> None:
    answer = resolver.resolve(ResourceRequest(cpus=8, memory=16 * GIB, time=7200, process="ALIGN"))
    assert answer is not None
    assert answer.memory == math.ceil(2 * GIB * 1.25)
    assert answer.time == 125
    assert answer.cpus == 3  # 180 % of a core, plus 25 %, rounded up; never above the 8 declared


def test_no_opinion_without_history(resolver: MaximumResolver) -> None:
    assert resolver.resolve(ResourceRequest(memory=GIB, process="SORT")) is None
    assert resolver.resolve(ResourceRequest(memory=GIB)) is None


def test_floors(resolver: MaximumResolver) -> None:
    history = open_history(":memory:")
    history.record([TaskRecord("r", "1", "TINY", True, peak_memory=MIB, realtime=1.0)])
    answer = MaximumResolver(history).resolve(ResourceRequest(process="TINY"))
    assert answer is not None and (answer.memory, answer.time) == (64 * MIB, 60)


def test_a_retry_after_out_of_memory_gets_more_than_the_failed_allocation() -> None:
    history = open_history(":memory:")
    history.record([
        TaskRecord("r", "1", "BIG", True, peak_memory=3 * GIB, memory=4 * GIB),
        TaskRecord("r", "2", "BIG", False, exit_code=137, out_of_memory=True, memory=4 * GIB),
    ])  # fmt: skip
    resolver = MaximumResolver(history)
    first = resolver.resolve(ResourceRequest(memory=4 * GIB, process="BIG"))
    retry = resolver.resolve(ResourceRequest(memory=4 * GIB, process="BIG", attempt=2))
    assert first is not None and retry is not None
    assert first.memory == math.ceil(3 * GIB * 1.2)
    assert retry.memory == 8 * GIB  # twice the allocation that was killed


def test_the_chain_caps_its_answer_by_the_limits(resolver: MaximumResolver) -> None:
    request = ResourceRequest(
        memory=GIB, process="ALIGN", resource_limits=ResourceLimits(memory=GIB)
    )
    resolution = resolve(request, [resolver], defaults=DEFAULTS)
    assert resolution.resolver == "maximum"
    assert resolution.effective.memory == GIB
