"""DescribeJobs entries in common terms. The entries are written from the AWS Batch API
reference (``JobDetail``, ``ContainerDetail``, ``AttemptDetail``) and the reasons from
the AWS Batch User Guide's troubleshooting pages; no real account was recorded."""

from __future__ import annotations

from typing import Any

import pytest

from seqera_core.backends import JobState
from seqera_core.backends.awsbatch._status import BATCH_STATES, CANCEL_REASON, seen


def ended(status: str = "FAILED", code: int | None = 1, **more: Any) -> dict[str, Any]:
    container: dict[str, Any] = {"logStreamName": "def/default/abc"}
    if code is not None:
        container["exitCode"] = code
    if "container_reason" in more:
        container["reason"] = more.pop("container_reason")
    attempts = more.pop("attempts", [{"container": dict(container)}])
    return {"status": status, "container": container, "attempts": attempts,
            "startedAt": 1_700_000_000_000, "stoppedAt": 1_700_000_042_500, **more}  # fmt: skip


@pytest.mark.parametrize("status", ["SUBMITTED", "PENDING", "RUNNABLE", "STARTING", "RUNNING"])
def test_states_before_the_end(status: str) -> None:
    view = seen({"status": status})
    assert view.state is BATCH_STATES[status] and not view.state.finished
    assert (view.reason is not None) == (status == "RUNNABLE")


def test_success_and_its_times() -> None:
    view = seen(ended("SUCCEEDED", 0))
    assert (view.state, view.exit_code, view.cause) == (JobState.SUCCEEDED, 0, None)
    assert view.started_at == 1_700_000_000 and view.stopped_at == 1_700_000_042.5
    assert view.log_stream == "def/default/abc" and view.attempts == 1


@pytest.mark.parametrize(
    ("entry", "cause"),
    [
        (ended(code=3, statusReason="Essential container in task exited"), "other"),
        (ended(code=137, statusReason="Essential container in task exited",
               container_reason="OutOfMemoryError: Container killed due to memory usage"),
         "out_of_memory"),
        (ended(code=None, statusReason="Job attempt duration exceeded timeout"), "time_limit"),
        (ended(code=None, statusReason="Host EC2 (instance i-0abc) terminated.",
               attempts=[{"container": {}}] * 3), "preempted"),
    ],
)  # fmt: skip
def test_failures_and_their_causes(entry: dict[str, Any], cause: str) -> None:
    view = seen(entry)
    assert view.state is JobState.FAILED and view.cause == cause
    assert entry["statusReason"] in (view.reason or "")


def test_a_terminated_job_reads_as_cancelled() -> None:
    view = seen(ended(code=143, statusReason=CANCEL_REASON))
    assert (view.state, view.cause, view.exit_code) == (JobState.CANCELLED, "cancelled", 143)


def test_the_last_attempts_exit_code_when_the_container_has_none() -> None:
    entry = ended(code=None, attempts=[{"container": {"exitCode": 2, "reason": "x"}}])
    view = seen(entry)
    assert view.exit_code == 2 and view.reason == "x"


def test_an_unknown_status_says_so() -> None:
    view = seen({"status": "PAUSED"})
    assert view.state is JobState.UNKNOWN and view.reason == "Batch status PAUSED"
