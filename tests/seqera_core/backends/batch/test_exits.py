"""How a scheduler's view of a finished job is completed by what its script recorded."""

from __future__ import annotations

import pytest

from seqera_core.backends.base import JobState
from seqera_core.backends.batch._exits import Observed, reconcile

ENDED_UNSAID = Observed(JobState.FAILED)  # Torque through Slurm's wrappers: no exit status


@pytest.mark.parametrize(
    ("seen", "recorded", "cancelled", "state", "code"),
    [
        (ENDED_UNSAID, 0, False, JobState.SUCCEEDED, 0),
        (ENDED_UNSAID, 3, False, JobState.FAILED, 3),
        (None, 3, False, JobState.FAILED, 3),
        (None, None, True, JobState.CANCELLED, None),
        (None, None, False, None, None),
        # a qdel that lands while the script runs: it records SIGTERM's 143
        (ENDED_UNSAID, 143, True, JobState.CANCELLED, 143),
        (None, 143, True, JobState.CANCELLED, 143),
        # cancelled too late: the job had already succeeded
        (ENDED_UNSAID, 0, True, JobState.SUCCEEDED, 0),
        (ENDED_UNSAID, None, True, JobState.CANCELLED, None),
    ],
)
def test_reconcile(
    seen: Observed | None,
    recorded: int | None,
    cancelled: bool,
    state: JobState | None,
    code: int | None,
) -> None:
    out = reconcile(seen, recorded, cancelled)
    if state is None:
        assert out is None
        return
    assert out is not None
    assert (out.state, out.exit_code) == (state, code)
    if state is JobState.CANCELLED:
        assert out.reason == "cancelled"


def test_a_scheduler_that_says_how_it_ended_is_believed() -> None:
    seen = Observed(JobState.FAILED, exit_code=1, reason="exit 1")
    assert reconcile(seen, 143, True) == seen
