"""What the local backend's tests share."""

from __future__ import annotations

import time
from collections.abc import Sequence

from seqera_core.backends.base import JobHandle, JobStatus
from seqera_core.backends.local import LocalBackend


def wait(backend: LocalBackend, handles: Sequence[JobHandle], limit: float = 60) -> list[JobStatus]:
    """The jobs' statuses once every one has finished; an AssertionError after ``limit`` s.

    Sleeps in the backend's own ``wait``, which a job's end cuts short, rather than
    polling on a tick (the machine is shared).
    """
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        backend.wait(handles, 0.5)
        statuses = backend.poll(handles)
        if all(status.state.finished for status in statuses):
            return statuses
    raise AssertionError(f"jobs still running after {limit} s: {backend.poll(handles)}")
