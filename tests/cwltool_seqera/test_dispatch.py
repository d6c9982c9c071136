"""The shared dispatcher enforces time limits finer than the scheduler's (Slurm: minutes)."""

from __future__ import annotations

import time
from pathlib import Path

from cwltool_seqera._dispatch import Dispatcher
from seqera_core.backends import JobSpec, JobState, LocalBackend


def test_a_job_past_its_limit_is_cancelled_and_reported_as_a_time_limit(tmp_path: Path) -> None:
    # No time in the request, so the backend itself sets no limit: only the dispatcher does.
    dispatcher = Dispatcher(LocalBackend(workdir=tmp_path), interval=0.1)
    started = time.monotonic()
    try:
        status = dispatcher.run(JobSpec("nap", ["sleep", "30"]), limit=1)
    finally:
        dispatcher.close()
    assert status.state is JobState.FAILED and status.time_limit
    assert "1 s" in (status.reason or "")
    assert time.monotonic() - started < 15


def test_a_job_within_its_limit_is_left_alone(tmp_path: Path) -> None:
    dispatcher = Dispatcher(LocalBackend(workdir=tmp_path), interval=0.1)
    try:
        status = dispatcher.run(JobSpec("quick", ["true"]), limit=30)
    finally:
        dispatcher.close()
    assert status.state is JobState.SUCCEEDED
