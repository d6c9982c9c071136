"""The life cycle every batch scheduler shares; Slurm, PBS Pro and Torque fill in the verbs.

A template-method base in the manner of psij-python's ``BatchSchedulerExecutor``:
:class:`BatchBackend` writes each job's script into a directory of its own
(``_jobdir``), submits it, polls many jobs with one native call, cancels many with one,
and reads logs. A scheduler supplies only argv builders, output parsers and a state map;
commands run through ``_commands`` and exit statuses are decoded by ``_exits``.

Submission, in this order (what the issue tracker calls "nothing half sent, nothing
sent twice"):

1. Every job's script is written and every submission's argv built (options checked)
   before anything reaches the scheduler: a job that cannot be expressed fails the whole
   call with a :class:`~seqera_core.errors.UsageError` and nothing is submitted.
2. Each submission carries a key unique to it (``_jobdir.submission_key``) in a field the
   scheduler keeps (Slurm: the comment; PBS Pro: a job variable; Torque: the job name).
3. A submission refused for good (bad account, invalid option) is not sent again; the
   batch's other submissions still go, and the call raises once they have. One whose
   outcome is unknown (the command timed out, or the scheduler said it was busy or
   unreachable, when it may have accepted the job anyway) is never sent again blindly:
   the scheduler is first asked for the key (one listing call), and the job is sent
   again only once the scheduler has answered that it does not have it; if it stays
   unreachable, the batch stops there.
4. If the batch fails part-way, :class:`SubmitError` carries what went out.

Retries that act on the cause happen in :meth:`BatchBackend.poll`, the same for every
engine; ``_recovery`` decides them (node failure, preemption; never OOM or time limit).
"""

from __future__ import annotations

import abc
import contextlib
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs
from attrs import frozen

from ..errors import UsageError
from ..squash import SquashPolicy
from ._arrays import array_shape, batches, write_array
from ._commands import CommandResult, RetryPolicy, Runner, run_command
from ._errors import SchedulerError, SubmitError, Unsent
from ._exits import Observed, from_wait_status, reconcile, shell_exit
from ._jobdir import (
    EXIT_FILE,
    JobFiles,
    JobIndex,
    job_environment,
    job_labels,
    job_script,
    prepare_job,
    started_id,
    submission_key,
)
from ._recovery import RESUBMIT_LIMITS, Sent, next_submission, resubmitted
from .base import Backend, JobHandle, JobSpec, JobState, JobStatus

__all__ = [
    "EXIT_FILE",
    "RESUBMIT_LIMITS",
    "BatchBackend",
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


@frozen
class _Send:
    """One submission, ready to go: which jobs, its argv, key and directory."""

    positions: tuple[int, ...]
    argv: tuple[str, ...]
    key: str
    directory: Path
    array: bool


def _partial(
    prepared: Sequence[tuple[JobSpec, JobFiles]],
    handles: Mapping[int, JobHandle],
    send: _Send,
    exc: Unsent,
) -> SubmitError:
    """What a batch that failed part-way carries: the jobs that went out, and whether
    ``send``'s jobs may be with the scheduler anyway."""
    done = sorted(handles)
    names = ", ".join(repr(prepared[n][0].name) for n in send.positions[:3])
    return SubmitError(
        f"cannot submit {names}",
        exc.result,
        [handles[n] for n in done],
        positions=done,
        unknown=send.positions if exc.unknown else (),
    )


class BatchBackend(Backend):
    """The shared life cycle of batch schedulers; subclasses supply the native verbs.

    Args:
        work_dir: where each job gets a directory (script, stdout, stderr, exit code);
            it must be visible from the compute nodes. Defaults to ``~/.seqera/jobs``.
        timeout: seconds any one scheduler command may take before it is killed.
        retry: backoff for transient errors (controller busy or restarting).
        env: extra environment for the scheduler commands (``SLURM_CONF``, ``PBS_SERVER``).
        runner: runs one argv; tests replace it to work without a scheduler.
        sleep: the pause between retries; tests replace it.
        squash: which jobs may go out together (arrays); off by default.
    """

    name = "batch"
    # Substrings of a failed command's output that mean "try again later".
    _TRANSIENT: tuple[str, ...] = ()
    # Whether this scheduler takes job arrays (see _array_argv), and the variable that
    # holds an element's index inside one.
    _ARRAYS = False
    _ARRAY_INDEX = ""

    def __init__(
        self,
        *,
        work_dir: str | os.PathLike[str] | None = None,
        timeout: float = 30.0,
        retry: RetryPolicy | None = None,
        env: Mapping[str, str] | None = None,
        runner: Runner | None = None,
        sleep: Callable[[float], None] = time.sleep,
        squash: SquashPolicy | None = None,
    ) -> None:
        super().__init__()
        self.squash = squash or SquashPolicy()
        self.work_dir = Path(work_dir) if work_dir else Path.home() / ".seqera" / "jobs"
        self.timeout = timeout
        self.retry = retry or RetryPolicy()
        self._env = None if env is None else {**os.environ, **env}
        self._runner: Runner = runner or run_command
        self._sleep = sleep
        self._index = JobIndex(self.work_dir)
        self._jobs: dict[str, Sent] = {}  # by the id submit() returned
        self._current: dict[str, str] = {}  # id submit() returned -> id of its latest run
        self._finished: dict[str, JobStatus] = {}
        self._cancelled: set[str] = set()

    # -- what each scheduler supplies ------------------------------------------------

    @abc.abstractmethod
    def _submit_argv(
        self, spec: JobSpec, files: JobFiles, key: str, exclude: Sequence[str] = ()
    ) -> list[str]:
        """The submission command for one job whose script is ``files.script``, carrying
        ``key`` where the scheduler keeps it and avoiding the ``exclude`` nodes if it can.

        Raises:
            UsageError: an option that cannot be used; it must name the field.
        """

    @abc.abstractmethod
    def _parse_submit(self, stdout: str) -> str:
        """The native job id from the submission command's output."""

    @abc.abstractmethod
    def _active(self, ids: Sequence[str]) -> dict[str, Observed]:
        """Jobs the scheduler still lists, with ONE native call; unknown ids are left out."""

    def _finished_lookup(self, ids: Sequence[str]) -> dict[str, Observed]:
        """Jobs the live listing has forgotten, from a history source (one call)."""
        return {}

    @abc.abstractmethod
    def _cancel_argv(self, ids: Sequence[str]) -> list[str]:
        """One command that cancels every id."""

    def _cancel_failed(self, result: CommandResult) -> bool:
        """Whether a non-zero cancel means more than "already finished"."""
        return True

    def _array_argv(
        self, spec: JobSpec, array: JobFiles, size: int, apart: bool, key: str
    ) -> list[str]:
        """One submission of an array of ``size`` elements shaped like ``spec``, running
        ``array.script``; element ``i``'s outputs are ``array.directory/<i>.out``/``.err``
        (one file when not ``apart``)."""
        raise NotImplementedError(f"{self.name} has no job arrays")

    def _element_id(self, base: str, index: int) -> str:
        """The native id of element ``index`` of the array ``base``."""
        raise NotImplementedError(f"{self.name} has no job arrays")

    def _find_key(self, key: str) -> tuple[bool, str | None]:
        """Ask the scheduler (one call) for the job carrying submission ``key``.

        Returns (whether the scheduler answered, the job's id or None). The default
        cannot ask: a submission with an unknown outcome is then never sent again.
        """
        return False, None

    def _settle(self, handle: JobHandle, seen: Observed) -> Observed:
        """Last scheduler-specific touch on a finished job (e.g. OOM from its log)."""
        return seen

    def _usage(self, ids: Sequence[str]) -> dict[str, tuple[float | None, int | None]]:
        """Wall seconds and peak memory bytes of jobs that just finished (one call), from
        the scheduler's accounting where it keeps them; what it does not know is left out."""
        return {}

    # -- commands --------------------------------------------------------------------

    def _run(self, argv: Sequence[str], *, cwd: str | None = None) -> CommandResult:
        self.calls[argv[0]] += 1
        return self._runner(list(argv), self.timeout, cwd, self._env)

    def _transient(self, result: CommandResult) -> bool:
        if result.returncode is None:
            return True
        text = f"{result.stdout}\n{result.stderr}".lower()
        return any(marker.lower() in text for marker in self._TRANSIENT)

    def _run_retrying(self, argv: Sequence[str], *, cwd: str | None = None) -> CommandResult:
        """Run argv, retrying transient failures with backoff; returns the last result.

        Only for commands that are safe to repeat (listing, cancelling): never submission.
        """
        delays = self.retry.delays()
        while True:
            result = self._run(argv, cwd=cwd)
            if result.ok or not self._transient(result):
                return result
            delay = next(delays, None)
            if delay is None:
                return result
            self._sleep(delay)

    # -- submission ------------------------------------------------------------------

    def submit(self, jobs: Sequence[JobSpec]) -> list[JobHandle]:
        """Write each job's script and submit it; handles in the same order.

        With arrays on (``squash`` policy ``array`` or ``squash``), jobs that could be
        one array's elements go out as one array submission.

        Raises:
            UsageError: a job cannot be expressed (its script, or an option such as
                ``slurm_extra``); raised before any job is submitted.
            SubmitError: the scheduler refused some jobs (the others were sent), or stayed
                unreachable part-way: see its ``submitted``, ``positions`` and ``unknown``.
        """
        prepared: list[tuple[JobSpec, JobFiles]] = []
        try:
            for spec in jobs:
                prepared.append((spec, self._prepare(spec)))
            sends = [
                self._plan(prepared, batch)
                for batch in batches(prepared, self.squash, self._ARRAYS)
            ]
        except (ValueError, UsageError) as exc:
            for _, files in prepared:  # nothing was sent: leave nothing behind
                shutil.rmtree(files.directory, ignore_errors=True)
            if isinstance(exc, UsageError):
                raise
            name = prepared[-1][0].name if len(prepared) == len(jobs) else jobs[len(prepared)].name
            raise UsageError(f"job {name!r} cannot be submitted to {self.name}: {exc}") from exc
        handles: dict[int, JobHandle] = {}
        refusal: tuple[_Send, Unsent] | None = None
        for send in sends:
            try:
                base = self._send(send.argv, send.key, send.directory)
            except Unsent as exc:
                if exc.refused:
                    # For this job's own reasons: the jobs handed over with it still go
                    # (tests/faults/test_snakemake_refused.py, the refused job first).
                    refusal = refusal or (send, exc)
                    continue
                raise _partial(prepared, handles, send, exc) from exc
            ids = (
                [self._element_id(base, i) for i in range(len(send.positions))]
                if send.array
                else [base]
            )
            for n, native_id in zip(send.positions, ids, strict=True):
                spec, files = prepared[n]
                self._index.remember(native_id, files.directory)
                self._jobs[native_id] = Sent(spec, files)
                handles[n] = JobHandle(
                    self.name, native_id, spec.name, str(files.stdout), str(files.stderr)
                )
        if refusal is not None:
            raise _partial(prepared, handles, *refusal) from refusal[1]
        return [handles[n] for n in range(len(prepared))]

    def _plan(self, prepared: Sequence[tuple[JobSpec, JobFiles]], batch: Sequence[int]) -> _Send:
        """The submission of one batch, argv built and checked; nothing is sent."""
        if len(batch) == 1:
            spec, files = prepared[batch[0]]
            key = submission_key(files.directory)
            argv = self._submit_argv(spec, files, key)
            return _Send(tuple(batch), tuple(argv), key, files.directory, array=False)
        members = [prepared[n] for n in batch]
        array = write_array(self.work_dir, [files for _, files in members], self._ARRAY_INDEX)
        first, apart = array_shape(members)
        key = submission_key(array.directory)
        argv = self._array_argv(first, array, len(members), apart, key)
        return _Send(tuple(batch), tuple(argv), key, array.directory, array=True)

    def _send(self, argv: Sequence[str], key: str, directory: Path) -> str:
        """Submit once, whatever fails: after an unknown outcome, ask for ``key`` first.

        Raises:
            Unsent: refused, or retries exhausted (``unknown`` if never answered).
        """
        delays = self.retry.delays()
        while True:
            result = self._run(argv, cwd=str(directory))
            if result.ok:
                return self._parse_submit(result.stdout)
            if not self._transient(result):
                raise Unsent("submission refused", result, unknown=False, refused=True)
            # Timed out, or the scheduler was busy or unreachable: it may have the job.
            while True:
                answered, found = self._find_key(key)
                # Not listed (any more)? A job that ran marked its directory on starting:
                # looked at after the listing, a job cannot slip between the two.
                found = found or started_id(directory)
                if found:
                    return found
                delay = next(delays, None)
                if delay is None:
                    raise Unsent("submission failed", result, unknown=not answered)
                self._sleep(delay)
                if answered:
                    break  # the scheduler says it has no such job: send it again

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
            for native_id, (wall, peak) in self._usage(list(runs)).items():
                if native_id in runs:
                    original = runs[native_id]
                    ended[original] = attrs.evolve(
                        ended[original], wall_seconds=wall, peak_memory_bytes=peak
                    )
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

    def _prepare(self, spec: JobSpec) -> JobFiles:
        return prepare_job(self.work_dir, spec)


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""
