"""What a failed attempt's next attempt gets, with or without a history (seqera_core.retries),
through the session every engine uses."""

from __future__ import annotations

from pathlib import Path

import attrs
import pytest

from seqera_core.backends.base import JobHandle, JobState, JobStatus
from seqera_core.causes import NODE_FAILURE, OTHER, PREEMPTED
from seqera_core.config import load_config
from seqera_core.models import ResourceLimits, ResourceRequest
from seqera_core.retries import Failure, rescued
from seqera_core.session import Finished, Session
from seqera_core.units import GIB, MIB

HANDLE = JobHandle("local", "1", "t")
DECLARED = ResourceRequest(cpus=2, memory=GIB, time=600, process="align")


def failed(**flags: object) -> JobStatus:
    return JobStatus(HANDLE, JobState.FAILED, exit_code=137, **flags)  # type: ignore[arg-type]


def test_out_of_memory_doubles_what_the_attempt_had() -> None:
    failure = Failure(DECLARED, DECLARED, failed(out_of_memory=True))
    assert failure.floor() == {"memory": 2 * GIB}
    assert failure.note() == "out of memory at 1 GiB: memory at least 2 GiB"


def test_a_time_limit_doubles_the_time() -> None:
    failure = Failure(DECLARED, DECLARED, failed(time_limit=True))
    assert failure.floor() == {"time": 1200}


@pytest.mark.parametrize("cause", [NODE_FAILURE, PREEMPTED])
def test_a_lost_node_or_preemption_gets_the_same_size(cause: str) -> None:
    given = ResourceRequest(cpus=2, memory=3 * GIB, time=900)
    failure = Failure(DECLARED, given, failed(cause=cause))
    assert failure.floor() == {"cpus": 2, "memory": 3 * GIB, "time": 900}


def test_other_failures_are_not_escalated() -> None:
    assert Failure(DECLARED, DECLARED, failed(cause=OTHER)).floor() == {}
    assert Failure(DECLARED, DECLARED, failed(cause=OTHER)).note() is None


def test_an_attempt_sized_below_its_declaration_is_rescued_once_at_no_less() -> None:
    shrunk = ResourceRequest(cpus=2, memory=64 * MIB, time=600)
    failure = Failure(DECLARED, shrunk, failed(out_of_memory=True))
    assert rescued(failure)
    assert failure.floor() == {"memory": GIB}  # the declared size, more than 2 x 64 MiB
    assert not rescued(Failure(DECLARED, shrunk, failed(out_of_memory=True), rescued=True))
    # given what it declared, an out-of-memory kill is the task's own: the engine retries
    assert not rescued(Failure(DECLARED, DECLARED, failed(out_of_memory=True)))
    assert not rescued(Failure(DECLARED, shrunk, failed(cause=OTHER)))


def _session(tmp_path: Path) -> Session:
    config = load_config(environ={}, cwd=tmp_path, home=tmp_path, flags={"backend": "local"})
    return Session(config, "test", work_dir=tmp_path)


def test_the_session_gives_the_next_attempt_what_the_last_one_lacked(tmp_path: Path) -> None:
    with _session(tmp_path) as session:
        first = session.prepare(DECLARED, task="t")
        assert first.request.memory == GIB
        session.record([Finished(first.request, failed(out_of_memory=True), task_id="t")])
        second = session.prepare(attrs_attempt(DECLARED, 2), task="t")
        assert second.request.memory == 2 * GIB
        assert second.declared.memory == GIB  # kept as declared, for caching
        assert "retry after out of memory at 1 GiB" in " ".join(second.notes)
        session.record([Finished(second.request, failed(out_of_memory=True), task_id="t")])
        third = session.prepare(attrs_attempt(DECLARED, 3), task="t")
        assert third.request.memory == 4 * GIB
        # another task, or the same one once it succeeded, starts from its declaration
        assert session.prepare(DECLARED, task="u").request.memory == GIB
        ok = JobStatus(HANDLE, JobState.SUCCEEDED, exit_code=0)
        session.record([Finished(third.request, ok, task_id="t")])
        assert session.prepare(DECLARED, task="t").request.memory == GIB


def test_a_resource_limit_still_caps_a_retry(tmp_path: Path) -> None:
    limited = attrs_attempt(DECLARED, 1, resource_limits=ResourceLimits(memory=GIB + GIB // 2))
    with _session(tmp_path) as session:
        first = session.prepare(limited, task="t")
        session.record([Finished(first.request, failed(out_of_memory=True), task_id="t")])
        second = session.prepare(attrs_attempt(limited, 2), task="t")
        assert second.request.memory == GIB + GIB // 2


def attrs_attempt(request: ResourceRequest, attempt: int, **changes: object) -> ResourceRequest:
    return attrs.evolve(request, attempt=attempt, **changes)  # type: ignore[arg-type]
