"""The shared poller: time limits finer than the scheduler's (Slurm: minutes), and
jobs whose status stays unknown are given up rather than waited for forever."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import attrs

from cwltool_seqera import process_status, status_message
from cwltool_seqera._poller import JobPoller
from seqera_core.backends import JobHandle, JobSpec, JobState, LocalBackend


def test_a_job_past_its_limit_is_cancelled_and_reported_as_a_time_limit(tmp_path: Path) -> None:
    # No time in the request, so the backend itself sets no limit: only the poller does.
    poller = JobPoller(LocalBackend(work_dir=tmp_path), interval=0.1)
    started = time.monotonic()
    try:
        status = poller.run(JobSpec("nap", ["sleep", "30"]), limit=1)
    finally:
        poller.close()
    assert status.state is JobState.FAILED and status.time_limit
    assert "1 s" in (status.reason or "")
    assert time.monotonic() - started < 15


def test_a_job_within_its_limit_is_left_alone(tmp_path: Path) -> None:
    poller = JobPoller(LocalBackend(work_dir=tmp_path), interval=0.1)
    try:
        status = poller.run(JobSpec("quick", ["true"]), limit=30)
    finally:
        poller.close()
    assert status.state is JobState.SUCCEEDED


class _Forgetful(LocalBackend):
    """A real local backend whose handles name jobs it never ran: it answers UNKNOWN."""

    def submit(self, jobs: Sequence[JobSpec]) -> list[JobHandle]:
        return [attrs.evolve(h, native_id=f"{h.native_id}-lost") for h in super().submit(jobs)]


def test_a_job_whose_status_stays_unknown_is_given_up(tmp_path: Path) -> None:
    poller = JobPoller(_Forgetful(work_dir=tmp_path), interval=0.1, unknown_timeout=1)
    started = time.monotonic()
    try:
        status = poller.run(JobSpec("lost", ["true"]))
    finally:
        poller.close()
    assert status.state is JobState.UNKNOWN
    assert "no known status for 1 s, given up" in (status.reason or "")
    assert "not a job of this local backend" in (status.reason or "")
    assert 1 <= time.monotonic() - started < 15
    assert status_message(status) is not None
    assert process_status(status.exit_code) == "permanentFail"
