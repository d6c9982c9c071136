"""How the local backend sees a job's leader end, and signals its process group.

Three kinds of leader, three ways to learn its end:

* this process's child: ``waitid(WNOWAIT)`` says it exited; what it left behind in its
  group is then killed (Slurm does the same when a batch script ends) while the zombie
  leader still holds the group id, so the id cannot have been recycled, and only then is
  it reaped with ``wait4``. Its ``ru_maxrss`` covers the children it waited for, but
  counts only when it exceeds this process's own peak at spawn time: Linux starts a
  child's high-water mark at the parent's resident size (fork copies it, exec keeps it).
* a child of the fork server: the server does the same and reports the wait status and
  ``ru_maxrss`` (``_forking.ForkServer.exit_status``); a server that died lost it.
* an adopted job (started by an earlier backend on the same ``state``): it is nobody's
  child here; its end is its pid gone (or a zombie), its status the ``exit`` file its
  ``sh`` wrapper, or for a fork the job and its server, wrote (``_marks``); a fork
  server's zombie with no status yet is given ``ZOMBIE_PATIENCE`` seconds for the server
  to write it.
  What it left in its group is not killed.

A job killed by signal N reports exit code 128 + N, as shells do (``_local_job.outcome``).
"""

from __future__ import annotations

import contextlib
import os
import signal

from attrs import frozen

from ._forking import ForkServer
from ._job import LocalJob
from ._marks import leader
from ._records import JobRecords

__all__ = ["ZOMBIE_PATIENCE", "Ended", "reap", "send_signal"]

# Seconds an adopted leader may stay a fork server's zombie with no exit status before it
# counts as lost: the server writes the status between the leader's end and its reaping.
ZOMBIE_PATIENCE = 5.0


@frozen
class Ended:
    """A leader's end: its exit status (``os.waitstatus_to_exitcode`` form: ``-N`` for
    signal N), or ``None`` with the reason it is not known; its peak memory in bytes and
    the CPU seconds (user + system) of the leader and the children it waited for."""

    code: int | None
    lost: str | None = None
    peak: int = 0
    cpu: float | None = None


def reap(
    job: LocalJob, forker: ForkServer | None, records: JobRecords | None, now: float
) -> Ended | None:
    """How ``job``'s leader ended, or ``None`` while it runs (reaping it if it is a child)."""
    if job.forked:
        return _forked(job, forker)
    if job.adopted:
        return _adopted(job, records, now)
    return _child(job)


def send_signal(job: LocalJob, forker: ForkServer | None, signum: signal.Signals) -> None:
    """Signal ``job``'s whole process group."""
    if job.forked and forker is not None:
        forker.signal(job.pid, signum)  # only while the server has not reaped it
        return
    # ESRCH: the group is already empty. EPERM: only setuid members are left; nothing
    # more can be done from here, and the job's leader is what the state follows.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(job.pid, signum)


def _child(job: LocalJob) -> Ended | None:
    try:
        exited = os.waitid(os.P_PID, job.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        # Someone else in this process waited for it (os.wait()): no status left.
        return Ended(None, "exit status lost (reaped elsewhere)")
    if exited is None:
        return None
    # The zombie leader still holds the group id: this cannot reach a recycled group.
    send_signal(job, None, signal.SIGKILL)
    _, status, usage = os.wait4(job.pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if job.process is not None:
        job.process.returncode = code  # so Popen never waits for it again
    peak = usage.ru_maxrss * 1024
    cpu = usage.ru_utime + usage.ru_stime
    return Ended(code, peak=peak if peak > job.baseline_rss else 0, cpu=cpu)


def _forked(job: LocalJob, forker: ForkServer | None) -> Ended | None:
    ended = None if forker is None else forker.exit_status(job.pid)
    if forker is None:
        ended = (None, 0, None)
    if ended is None:
        return None
    status, maxrss, cpu = ended
    if status is None:
        return Ended(None, "exit status lost: the fork server died")
    return Ended(os.waitstatus_to_exitcode(status), peak=maxrss, cpu=cpu)


def _adopted(job: LocalJob, records: JobRecords | None, now: float) -> Ended | None:
    seen = leader(job.pid)
    if seen is not None and not seen.zombie:
        return None  # still running
    code = None
    if records is not None:
        with contextlib.suppress(OSError, ValueError):
            code = int(records.exit_file(job.handle.native_id).read_text().strip())
    if code is None and seen is not None and seen.status_coming:
        # A zombie of a fork server, whose status it writes before it reaps the leader.
        if job.gone_at is None:
            job.gone_at = now
            if job.pidfd is not None:  # readable from now on: it would wake us in a loop
                os.close(job.pidfd)
                job.pidfd = None
        if now - job.gone_at < ZOMBIE_PATIENCE:
            return None
    if code is None and job.kill_at is not None:  # ended by our own signal
        code = -(signal.SIGKILL if job.killed else signal.SIGTERM)
    if code is None:
        return Ended(None, "ended with no exit status (killed by a signal) while its "
                           "backend was not watching")  # fmt: skip
    return Ended(code)
