"""The life cycle every batch scheduler shares; Slurm, PBS Pro and Torque fill in the verbs.

A template-method base in the manner of psij-python's ``BatchSchedulerExecutor``:
:class:`BatchBackend` writes each job's script into a directory of its own
(``_jobdir``), submits it, polls many jobs with one native call, cancels many with one,
and reads logs. A scheduler supplies only argv builders, output parsers and a state map;
commands run through ``_commands`` and exit statuses are decoded by ``_exits``.

Submission (``_submit``: every job's script written and argv built before anything is
sent, a key in each submission, a job whose submission had an unknown outcome looked for
before it is sent again) is :class:`~._submit.Submitting`'s, which this class extends.

Retries that act on the cause happen in :meth:`BatchBackend.poll`, the same for every
engine; ``_recovery`` decides them (node failure, preemption; never OOM or time limit).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path

import attrs

from ..base import JobHandle, JobState, JobStatus
from ._commands import CommandResult, RetryPolicy, run_command
from ._errors import SchedulerError, SubmitError, Unsent
from ._exits import Observed, from_wait_status, reconcile, shell_exit
from ._jobdir import (
    EXIT_FILE,
    JobFiles,
    job_environment,
    job_labels,
    job_script,
    prepare_job,
)
from ._recovery import RESUBMIT_LIMITS, next_submission, resubmitted
from ._submit import Submitting
from ._verbs import BatchVerbs

__all__ = [
    "EXIT_FILE",
    "RESUBMIT_LIMITS",
    "BatchBackend",
    "BatchVerbs",
    "CommandResult",
    "JobFiles",
    "Observed",
    "RetryPolicy",
    "SchedulerError",
    "SubmitError",
    "from_wait_status",
    "job_environment",
    "job_labels",
    "job_script",
    "prepare_job",
    "run_command",
    "shell_exit",
]


class BatchBackend(Submitting):
    """The shared life cycle of batch schedulers over :class:`BatchVerbs` (its arguments)."""

    # -- polling and the cause-driven retries ----------------------------------------

    def poll(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        """Every handle's status: one listing call, plus one history call if any were missing.

        A job that ended in a node failure or a preemption is sent again here (see the
        module's docstring); its status then reads PENDING with ``resubmissions`` counted.

        Raises:
            SchedulerError: the listing failed for a reason retrying does not cure.
        """
        current = {h.native_id: self._current.get(h.native_id, h.native_id) for h in handles}
        ids = list(dict.fromkeys(current[h.native_id] for h in handles
                                 if h.native_id not in self._finished))  # fmt: skip
        seen, unreachable = self._observe(ids)
        ended: dict[str, JobStatus] = {}
        live: dict[str, JobStatus] = {}
        for handle in handles:
            original = handle.native_id
            if original in self._finished or original in ended or original in live:
                continue
            run = attrs.evolve(handle, native_id=current[original])
            status = self._status(run, seen.get(run.native_id), unreachable)
            job = self._jobs.get(original)
            count = sum(job.resubmissions.values()) if job else 0
            status = attrs.evolve(status, handle=handle, resubmissions=count)
            if status.state.finished:
                status = self._resubmit(original, status)
            (ended if status.state.finished else live)[original] = status
        if ended:
            # what they used: one accounting call for every job that ended in this poll
            runs = {current[o]: o for o in ended}
            for native_id, (wall, peak, cpu) in self._usage(list(runs)).items():
                if native_id in runs:
                    original = runs[native_id]
                    ended[original] = attrs.evolve(
                        ended[original], wall_seconds=wall, peak_memory_bytes=peak,
                        cpu_seconds=cpu,
                    )  # fmt: skip
            self._finished.update(ended)
        return [
            attrs.evolve(
                self._finished.get(h.native_id) or live[h.native_id],
                handle=h,
            )
            for h in handles
        ]

    def _observe(self, ids: Sequence[str]) -> tuple[dict[str, Observed], str | None]:
        seen: dict[str, Observed] = {}
        if not ids:
            return seen, None
        try:
            seen = self._active(ids)
        except SchedulerError as exc:
            # Still failing after the retries: the scheduler is down or overloaded, so say
            # UNKNOWN (not finished: callers poll again). Anything else is a fault.
            if exc.result is None or not self._transient(exc.result):
                raise
            return seen, str(exc)
        missing = [i for i in ids if i not in seen]
        if missing:
            with contextlib.suppress(SchedulerError):
                seen.update(self._finished_lookup(missing))
        return seen, None

    def _resubmit(self, original: str, status: JobStatus) -> JobStatus:
        """Send a job that failed for its node's or a preemption's sake again, if allowed."""
        job = self._jobs.get(original)
        if job is None or original in self._cancelled:
            return status
        plan = next_submission(job, status)
        if plan is None:
            return status
        job.files.forget_run()  # the new run writes its own
        excluded = plan.excluded
        try:
            try:
                argv = self._submit_argv(job.spec, job.files, plan.key, excluded)
                new_id = self._send(argv, plan.key, job.files.directory)
            except Unsent as exc:
                if exc.unknown or not excluded:
                    raise
                # Refused with those nodes excluded (a one-node partition): the failed
                # node may be back, and a job sent again beats a job lost.
                excluded = ()
                argv = self._submit_argv(job.spec, job.files, plan.key, excluded)
                new_id = self._send(argv, plan.key, job.files.directory)
        except SchedulerError as exc:
            return attrs.evolve(status, reason=f"{status.reason}; not sent again: {exc}")
        self._jobs[original] = attrs.evolve(job, excluded=excluded)
        self._current[original] = new_id
        self._index.remember(new_id, job.files.directory)
        return resubmitted(status, new_id, plan.count)

    def _status(
        self, handle: JobHandle, seen: Observed | None, unreachable: str | None
    ) -> JobStatus:
        native_id = handle.native_id
        recorded = self._index.exit_code(native_id)
        seen = reconcile(seen, recorded, native_id in self._cancelled)
        if seen is None:
            why = unreachable or f"{self.name} does not know job {native_id} (yet)"
            return JobStatus(handle, JobState.UNKNOWN, reason=why)
        if seen.state.finished:
            seen = self._settle(handle, seen)
        return JobStatus(
            handle,
            seen.state,
            exit_code=seen.exit_code,
            reason=seen.reason,
            out_of_memory=seen.out_of_memory,
            time_limit=seen.time_limit,
            cause=seen.final_cause,
            node=seen.node,
        )

    # -- cancel, logs ----------------------------------------------------------------

    def cancel(self, handles: Sequence[JobHandle]) -> None:
        """Cancel every unfinished job (its latest run) with one command."""
        originals = [h.native_id for h in handles if h.native_id not in self._finished]
        ids = list(dict.fromkeys(self._current.get(o, o) for o in originals))
        if not ids:
            return
        result = self._run_retrying(self._cancel_argv(ids))
        if not result.ok and self._cancel_failed(result):
            raise SchedulerError("cancel failed", result)
        self._cancelled.update(ids)
        self._cancelled.update(originals)

    def logs(self, handle: JobHandle) -> str:
        """The job's stdout so far, then its stderr if kept apart."""
        paths = dict.fromkeys(p for p in (handle.stdout, handle.stderr) if p)
        return "".join(_read(Path(p)) for p in paths)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
