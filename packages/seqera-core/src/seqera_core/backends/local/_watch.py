"""What the local backend's monitor thread sleeps on between two looks at its jobs.

It wakes when a job's leader ends (its pidfd; the fork server's socket for forked jobs,
which also says when the server is ready), when a deadline comes (the next memory
sample, a time limit, a SIGKILL after the grace, the end of the wait for the fork
server's preload), or when another thread writes to its wake-up pipe (a submission, a
cancel, a detach). Without pidfds (Linux before 5.3) an exit is noticed on a short tick.
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Collection

from ._forking import ForkServer
from ._job import LocalJob

__all__ = ["TICK", "Wakeup", "watched"]

TICK = 0.02  # seconds between looks for the end of a leader no descriptor watches


class Wakeup:
    """A pipe that cuts the monitor thread's sleep short (any thread may ``wake`` it)."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)

    def wake(self) -> None:
        with contextlib.suppress(BlockingIOError):  # a full pipe already means "wake up"
            os.write(self._write, b"x")

    def sleep(self, fds: Collection[int], until: float) -> None:
        """Until one of ``fds`` is readable, the monotonic time ``until``, or a wake-up."""
        poller = select.poll()
        for fd in (self._read, *fds):
            poller.register(fd, select.POLLIN)
        ready = poller.poll(max(0.0, until - time.monotonic()) * 1000)
        if any(fd == self._read for fd, _ in ready):
            with contextlib.suppress(BlockingIOError):
                os.read(self._read, 4096)

    def close(self) -> None:
        os.close(self._read)
        os.close(self._write)


def watched(
    running: Collection[LocalJob], forker: ForkServer | None, waiting: bool, next_sample: float
) -> tuple[list[int], float]:
    """The descriptors to sleep on and the time to wake at the latest, for these running
    jobs (``waiting``: jobs are queued)."""
    fds = [job.pidfd for job in running if job.pidfd is not None]
    watched = len(fds)
    waits = [next_sample]
    if forker is not None and forker.alive:
        fds.append(forker.fileno())  # it says when it is ready, and when a job ended
        watched += sum(job.forked for job in running)
        if waiting and forker.ready_deadline is not None:
            waits.append(forker.ready_deadline)
    if watched < len(running):
        waits.append(time.monotonic() + TICK)
    for job in running:
        waits.extend(t for t in (job.kill_at, job.deadline) if t is not None)
    return fds, min(waits)
