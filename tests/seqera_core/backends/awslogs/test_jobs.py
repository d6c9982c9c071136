"""A container job's end held back for its usage line: what each backend reports meanwhile.

Reading the line itself (FilterLogEvents) is exercised against the emulator by both
backends' integration suites (a line found, a line waited for and given up on).
"""

from __future__ import annotations

import logging

import pytest

from seqera_core.backends import JobHandle, JobState, JobStatus
from seqera_core.backends.awslogs import LoggedJob, UsageLog, asked, container_overrides, wrapped
from seqera_core.errors import ResourceError
from seqera_core.models import ResourceRequest

HANDLE = JobHandle("ecs", "arn:task/1", "align")


def usage(ended: str = "stopped") -> UsageLog:
    return UsageLog(None, "/aws/ecs/seqera", 15.0, "ECS task", ended, logging.getLogger("t"))


def test_a_job_without_a_usage_line_is_final_at_once() -> None:
    job, final = LoggedJob("arn:task/1"), JobStatus(HANDLE, JobState.SUCCEEDED, 0)
    assert usage().end(job, final, now=100.0, logged=False) is final
    assert (job.final, job.ended) == (final, None)


def test_a_logged_job_waits_for_its_line_as_running() -> None:
    job, final = LoggedJob("arn:task/1"), JobStatus(HANDLE, JobState.FAILED, 3)
    shown = usage("ended").end(job, final, now=100.0, logged=True)
    assert (shown.state, shown.reason, shown.handle) == (
        JobState.RUNNING, "ended; reading its usage", HANDLE)  # fmt: skip
    assert (job.ended, job.final, job.usage_deadline) == (final, None, 115.0)
    assert job.name == "arn:task/1"  # what the give-up warning names


def test_asked_fills_defaults_and_names_the_service() -> None:
    got = asked(ResourceRequest(container="ubuntu", memory=3), backend="ecs", service="ECS",
                cpus=1.5, memory=2048)  # fmt: skip
    assert (got.image, got.cpus, got.memory, got.gpus, got.disk) == ("ubuntu", 1.5, 3, 0, None)
    with pytest.raises(ResourceError, match="a container image for AWS Batch"):
        asked(ResourceRequest(), backend="batch", service="AWS Batch", cpus=1, memory=1)


def test_overrides_wrap_the_command_and_let_the_jobs_variables_win() -> None:
    labels, env = {"team": "gen"}, {"SEQERA_LABEL_TEAM": "mine", "X": "1"}
    got = container_overrides(["echo", "hi"], env, labels, usage=True)
    assert got["command"] == wrapped(["echo", "hi"])
    assert got["environment"] == [
        {"name": "SEQERA_LABEL_TEAM", "value": "mine"}, {"name": "X", "value": "1"}]  # fmt: skip
    assert container_overrides(["true"], {}, {}, usage=False) == {"command": ["true"]}
