"""DescribeTasks entries in common terms: the state map, exit codes, spot and OOM flags."""

from __future__ import annotations

import datetime
from typing import Any

import pytest

from seqera_core.backends import JobState
from seqera_core.backends.ecs._status import ECS_STATES, Seen, seen


def stopped(
    code: int | None = 0, stop_code: str | None = "EssentialContainerExited", **more: Any
) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main"}
    if code is not None:
        container["exitCode"] = code
    if "container_reason" in more:
        container["reason"] = more.pop("container_reason")
    task: dict[str, Any] = {"lastStatus": "STOPPED", "containers": [container], **more}
    if stop_code:
        task["stopCode"] = stop_code
    return task


@pytest.mark.parametrize(
    ("status", "state"),
    [
        ("PROVISIONING", JobState.PENDING),
        ("PENDING", JobState.PENDING),
        ("ACTIVATING", JobState.PENDING),
        ("RUNNING", JobState.RUNNING),
        ("DEACTIVATING", JobState.RUNNING),
        ("STOPPING", JobState.RUNNING),
        ("DEPROVISIONING", JobState.RUNNING),
    ],
)
def test_states_before_stopped(status: str, state: JobState) -> None:
    assert ECS_STATES[status] is state
    assert seen({"lastStatus": status, "containers": [{"name": "main", "exitCode": 1}]}) == Seen(
        state
    )


def test_unknown_status_says_so() -> None:
    assert seen({"lastStatus": "HIBERNATING"}) == Seen(
        JobState.UNKNOWN, reason="ECS status HIBERNATING"
    )


def test_exit_codes() -> None:
    assert seen(stopped(0)) == Seen(JobState.SUCCEEDED, 0)
    assert seen(stopped(2, stoppedReason="Essential container in task exited")) == Seen(
        JobState.FAILED, 2, "Essential container in task exited"
    )
    assert seen({**stopped(5), "lastStatus": "DELETED"}).exit_code == 5


def test_a_missing_exit_code_is_a_failure() -> None:
    view = seen(stopped(None))
    assert (view.state, view.exit_code) == (JobState.FAILED, None)
    assert (
        view.reason
        == "the container exited without an exit code (stopCode EssentialContainerExited)"
    )
    failed = seen(stopped(None, "TaskFailedToStart", stoppedReason="CannotPullContainerError: x"))
    assert (failed.state, failed.reason) == (JobState.FAILED, "CannotPullContainerError: x")
    assert seen(stopped(0, "TaskFailedToStart")).state is JobState.FAILED


def test_the_main_container_is_the_one_read() -> None:
    task = stopped(0)
    task["containers"].insert(0, {"name": "sidecar", "exitCode": 9})
    assert seen(task).state is JobState.SUCCEEDED


def test_out_of_memory() -> None:
    view = seen(
        stopped(137, container_reason="OutOfMemoryError: Container killed due to memory usage")
    )
    assert (view.state, view.exit_code, view.out_of_memory) == (JobState.FAILED, 137, True)
    assert not seen(stopped(1)).out_of_memory


@pytest.mark.parametrize(
    "task",
    [
        stopped(None, "SpotInterruption"),
        stopped(None, "TerminationNotice"),
        stopped(None, "SPOT_INTERRUPTION"),
        stopped(None, None, stoppedReason="Your Spot Task was interrupted."),
        stopped(143, None, stoppedReason="Host EC2 (instance i-0123456789abcdef0) terminated."),
    ],
)
def test_spot_interruptions(task: dict[str, Any]) -> None:
    view = seen(task)
    assert view.spot and view.state is JobState.FAILED and view.reason


def test_not_spot() -> None:
    assert not seen(stopped(1, stoppedReason="Essential container in task exited")).spot
    assert not seen(stopped(1, stoppedReason="spotless run failed")).spot


def test_stopped_by_someone() -> None:
    view = seen(stopped(143, "UserInitiated", stoppedReason="Task stopped by user"))
    assert (view.state, view.reason) == (JobState.CANCELLED, "Task stopped by user")


def test_started_and_stopped_at() -> None:
    when = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC)
    later = when + datetime.timedelta(seconds=90)
    assert seen({"lastStatus": "RUNNING", "startedAt": when}).started_at == when.timestamp()
    view = seen(stopped(0, startedAt=when, stoppedAt=later))
    assert (view.started_at, view.stopped_at) == (when.timestamp(), later.timestamp())
