"""Parsing nf-weblog events: units, how an attempt ended, and faults named by field."""

from __future__ import annotations

import pytest

from seqera_core.errors import WireError
from seqera_sidecar import parse_event

from .conftest import recorded_events


def _completed(**trace: object) -> dict[str, object]:
    base = {"task_id": 7, "process": "ALIGN", "status": "COMPLETED", "exit": 0, "attempt": 1,
            "memory": 4 * 2**30, "time": 3_600_000, "cpus": 4, "peak_rss": 2**30,
            "realtime": 90_500, "%cpu": 380.5, "rchar": 10**9,
            "complete": 1674490106000}  # fmt: skip
    return {"runName": "happy_turing", "runId": "r1", "event": "process_completed",
            "utcTime": "2026-11-23T00:00:00Z", "trace": {**base, **trace}}  # fmt: skip


def test_trace_units_become_canonical() -> None:
    record = parse_event(_completed()).record
    assert record is not None
    assert (record.memory, record.time, record.realtime) == (4 * 2**30, 3600, 90.5)
    assert (record.peak_memory, record.cpu_percent, record.input_bytes) == (2**30, 380.5, 10**9)
    assert record.succeeded and record.engine == "nextflow" and record.finished == 1674490106.0


def test_how_a_failed_attempt_ended() -> None:
    oom = parse_event(_completed(status="FAILED", exit=137)).record
    slow = parse_event(_completed(status="FAILED", exit=140)).record
    other = parse_event(_completed(status="FAILED", exit=1)).record
    assert oom is not None and oom.out_of_memory and not oom.succeeded
    assert slow is not None and slow.time_limit and not slow.out_of_memory
    assert other is not None and not (other.out_of_memory or other.time_limit)


def test_only_completed_events_carry_a_record() -> None:
    for document in recorded_events()[:50]:
        event = parse_event(document)
        assert (event.record is not None) == (event.event == "process_completed")


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"event": "process_exploded"}, "$.event"),
        ({"runId": ""}, "$.runId"),
        ({"trace": None}, "$.trace"),
        ({"trace": {"task_id": 1, "process": "A", "memory": "4 GB"}}, "$.trace.memory"),
        ({"trace": {"task_id": 1, "process": "A", "peak_rss": -5}}, "$.trace.peak_rss"),
        ({"trace": {"task_id": 1}}, "$.trace.process"),
        # found by the contract fuzzing: beyond a 64-bit column, not a 500 from SQLite
        ({"trace": {"task_id": 1, "process": "A", "rchar": 2**63}}, "$.trace.rchar"),
        ({"trace": {"task_id": 1, "process": "A", "rchar": 9.3e18}}, "$.trace.rchar"),
    ],
)
def test_faults_name_the_field(change: dict[str, object], named: str) -> None:
    with pytest.raises(WireError) as caught:
        parse_event({**_completed(), **change})
    assert any(p.startswith(named) for p in caught.value.problems), caught.value.problems
