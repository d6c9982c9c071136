"""How a batch job ended: exit statuses decoded the shell's way, and a scheduler's view.

Exit codes follow the shell: a normal exit N is N, death by signal S is 128 + S and the
reason names the signal (``man 1p sh``, "Exit Status"; ``waitpid(2)`` for the raw form
Slurm's ``exit_code`` field holds).
"""

from __future__ import annotations

import signal

import attrs
from attrs import frozen

from ..base import JobState, job_cause

__all__ = ["Observed", "from_wait_status", "reconcile", "shell_exit"]


@frozen
class Observed:
    """A scheduler's view of one job, before the base class settles its final status.

    ``cause`` is one of ``base.CAUSES`` when the scheduler says more than the flags
    (a node failure, a preemption); None lets the flags decide. ``node`` is where the job
    ran (a node list for a multi-node job), when the scheduler says.
    """

    state: JobState
    exit_code: int | None = None
    reason: str | None = None
    out_of_memory: bool = False
    time_limit: bool = False
    cause: str | None = None
    node: str | None = None

    @property
    def final_cause(self) -> str | None:
        """The cause to report: the scheduler's own, else what the flags say."""
        if self.cause is not None and self.state.finished:
            return self.cause
        return job_cause(self.state, self.out_of_memory, self.time_limit)


def shell_exit(code: int | None, sig: int | None) -> tuple[int | None, str | None]:
    """The shell's exit code for an exit status or a signal, and a reason for a signal."""
    if sig:
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return 128 + sig, f"killed by {name}"
    return code, None


def from_wait_status(raw: int) -> tuple[int | None, str | None]:
    """Shell exit code and reason from a ``waitpid`` status (Slurm's ``exit_code`` field)."""
    return shell_exit((raw >> 8) & 0xFF, raw & 0x7F)


def reconcile(seen: Observed | None, recorded: int | None, cancelled: bool) -> Observed | None:
    """What the scheduler said, completed by what the job's script recorded.

    ``recorded`` is the exit code the script wrote into its directory (None if it has
    not), ``cancelled`` whether this process cancelled the job. A job the scheduler has
    forgotten is known by its recorded code, or as cancelled; otherwise None (unknown).
    A job it says ended without saying how (Torque through Slurm's wrappers) takes the
    recorded code. A job this process cancelled that then ended non-zero is cancelled,
    whatever its script recorded: a ``qdel`` that lands while the script runs makes it
    record the signal's exit (143), which is the cancel, not a failure.
    """
    if seen is None:
        if recorded is not None:
            return _ended(recorded, cancelled, Observed(JobState.FAILED))
        return Observed(JobState.CANCELLED, reason="cancelled") if cancelled else None
    if seen.state.finished and seen.exit_code is None:
        if recorded is not None and seen.state in (JobState.SUCCEEDED, JobState.FAILED):
            return _ended(recorded, cancelled, seen)
        if cancelled and seen.state is JobState.FAILED:
            return attrs.evolve(seen, state=JobState.CANCELLED, reason="cancelled")
    return seen


def _ended(recorded: int, cancelled: bool, seen: Observed) -> Observed:
    if recorded == 0:
        return attrs.evolve(seen, state=JobState.SUCCEEDED, exit_code=0)
    if cancelled:
        return attrs.evolve(seen, state=JobState.CANCELLED, exit_code=recorded, reason="cancelled")
    return attrs.evolve(seen, state=JobState.FAILED, exit_code=recorded)
