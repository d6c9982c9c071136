"""The local backend's limits on running jobs: time, memory, and the grace after SIGTERM.

A job past its time limit, or cancelled, gets SIGTERM on its whole process group, then
SIGKILL ``kill_grace`` seconds later if its leader has not ended by then; a job whose
sampled memory (the sum over its session, ``_procfs.scan_sessions``) exceeds its request
gets SIGKILL at once and is flagged ``out_of_memory``, as the kernel's OOM killer would
do in a cgroup. A job being ended keeps the first reason it was ended for. Each function
returns how many signals it sent (the backend's ``calls["kill"]``).
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterable, Mapping

from ._forking import ForkServer
from ._job import LocalJob
from ._reap import send_signal

__all__ = ["enforce", "kill", "over_memory", "terminate"]


def terminate(job: LocalJob, forker: ForkServer | None, now: float, grace: float) -> int:
    """SIGTERM the job's group now, and have it killed ``grace`` seconds later."""
    send_signal(job, forker, signal.SIGTERM)
    job.kill_at = now + grace
    return 1


def kill(job: LocalJob, forker: ForkServer | None) -> int:
    """SIGKILL the job's group now."""
    send_signal(job, forker, signal.SIGKILL)
    job.killed = True
    job.kill_at = job.kill_at or time.monotonic()
    return 1


def enforce(
    running: Iterable[LocalJob], forker: ForkServer | None, now: float, grace: float
) -> int:
    """Kill what its grace has run out for, terminate what its time limit has."""
    sent = 0
    for job in running:
        if job.kill_at is not None and now >= job.kill_at and not job.killed:
            sent += kill(job, forker)
        deadline = job.deadline
        if deadline is not None and now >= deadline and job.kill_at is None:
            job.time_limit = True
            sent += terminate(job, forker, now, grace)
    return sent


def over_memory(
    sessions: Mapping[int, LocalJob],
    usage: Mapping[int, tuple[int, int, float]],
    forker: ForkServer | None,
    *,
    enforce_memory: bool,
) -> int:
    """Take one sample (``usage``: session leader -> (sum, highest single high-water
    mark, CPU seconds)) into each job's peak and CPU time, and kill a job over its request."""
    sent = 0
    for pid, (total, highest, cpu) in usage.items():
        job = sessions[pid]
        job.peak = max(job.peak, total, highest)
        job.cpu = max(job.cpu or 0.0, cpu)
        ending = job.state.finished or job.kill_at is not None
        # a job in a memory cgroup is the kernel's to kill, at its limit, not a sample's
        in_cgroup = job.cgroup is not None
        if enforce_memory and job.memory and total > job.memory and not ending and not in_cgroup:
            job.out_of_memory = True
            sent += kill(job, forker)
    return sent
