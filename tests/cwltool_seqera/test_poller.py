"""The shared poller: time limits finer than the scheduler's (Slurm: minutes), and
jobs whose status stays unknown are given up rather than waited for forever."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import attrs

from cwltool_seqera import process_status, status_message
from cwltool_seqera._poller import JobPoller
from seqera_core.backends import JobHandle, JobSpec, JobState, LocalBackend, SchedulerError


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


class _ControllerDown(LocalBackend):
    """A real local backend whose cancel fails the first ``failures`` times, as ``scancel``
    does while slurmctld is down."""

    def __init__(self, failures: int, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self.failures = failures

    def cancel(self, handles: Sequence[JobHandle]) -> None:
        if self.failures > 0:
            self.failures -= 1
            raise SchedulerError("scancel: Unable to contact slurm controller (connect failure)")
        super().cancel(handles)


def test_an_overdue_job_whose_cancel_fails_is_cancelled_later_and_nothing_hangs(
    tmp_path: Path,
) -> None:
    # Defect 6 of issue 20: the poller died on the failed cancel and run() waited for ever.
    backend = _ControllerDown(3, work_dir=tmp_path)
    poller = JobPoller(backend, interval=0.1)
    marker = tmp_path / "still-running"
    started = time.monotonic()
    try:
        spec = JobSpec("nap", ["sh", "-c", f"sleep 3; touch {marker}; sleep 30"])
        status = poller.run(spec, limit=1)
    finally:
        poller.close()
    assert status.state is JobState.FAILED and status.time_limit
    assert backend.failures == 0  # cancelled once the "controller" answered again
    assert time.monotonic() - started < 15
    time.sleep(3)
    assert not marker.exists()  # the job really was stopped, not only reported


def test_a_job_that_cannot_be_cancelled_for_long_is_reported_not_waited_for(
    tmp_path: Path,
) -> None:
    backend = _ControllerDown(10**6, work_dir=tmp_path)
    poller = JobPoller(backend, interval=0.1, unknown_timeout=1)
    started = time.monotonic()
    try:
        status = poller.run(JobSpec("nap", ["sleep", "30"]), limit=1)
    finally:
        backend.failures = 0
        poller.close()
    assert status.state is JobState.FAILED and status.time_limit
    assert "could not be cancelled" in (status.reason or "")
    assert time.monotonic() - started < 15
