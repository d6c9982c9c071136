"""Submission on every batch scheduler: each job sent once, and found again by its key.

:class:`Submitting` writes each job's script into a directory of its own (``_jobdir``) and
submits it (arrays: ``_arrays``), and finds a job again by its key; the rest of the life
cycle is :class:`~._base.BatchBackend`'s.

Submission, in this order (what the issue tracker calls "nothing half sent, nothing
sent twice"):

1. Every job's script is written and every submission's argv built (options checked)
   before anything reaches the scheduler: a job that cannot be expressed fails the whole
   call with a :class:`~seqera_core.errors.UsageError` and nothing is submitted.
2. Each submission carries a key unique to it (``_jobdir.submission_key``) in a field the
   scheduler keeps (Slurm: the comment; PBS Pro: a job variable; Torque: the job name),
   and a caller's own key (``JobSpec.key``) is recorded with the submission it went out
   in, so :meth:`BatchBackend.find` in a later process can ask the scheduler for it.
3. A submission refused for good (bad account, invalid option) is not sent again; the
   batch's other submissions still go, and the call raises once they have. One whose
   outcome is unknown (the command timed out, or the scheduler said it was busy or
   unreachable, when it may have accepted the job anyway) is never sent again blindly:
   the scheduler is first asked for the key (one listing call), and the job is sent
   again only once the scheduler has answered that it does not have it; if it stays
   unreachable, the batch stops there.
4. If the batch fails part-way, :class:`SubmitError` carries what went out.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from attrs import frozen

from ...errors import UsageError
from ..base import JobHandle, JobSpec, NoLookup
from ._arrays import array_shape, batches, write_array
from ._errors import SchedulerError, SubmitError, Unsent
from ._jobdir import JobFiles, KeyRecord, prepare_job, started_id, submission_key
from ._recovery import Sent, latest_run
from ._verbs import BatchVerbs

__all__ = ["Submitting"]


# Seconds the submit host's clock may be ahead of the scheduler's.
_CLOCK_SKEW = 300.0


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
    refused: Sequence[tuple[_Send, Unsent]] = (),
) -> SubmitError:
    """What a batch that failed part-way carries: the jobs that went out, whether
    ``send``'s jobs may be with the scheduler anyway, and each unsent job's own error
    (``send``'s, and those of the submissions ``refused`` before it)."""
    done = sorted(handles)
    names = ", ".join(repr(prepared[n][0].name) for n in send.positions[:3])
    errors = {}
    for each, why in (*refused, (send, exc)):
        for n in each.positions:
            errors[n] = f"cannot submit {prepared[n][0].name!r}: {why}"
    return SubmitError(
        f"cannot submit {names}",
        exc.result,
        [handles[n] for n in done],
        positions=done,
        unknown=send.positions if exc.unknown else (),
        errors=errors,
    )


class Submitting(BatchVerbs):
    """The submission half of :class:`~._base.BatchBackend`: submit, find, send once."""

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
            self._remember_keys(prepared, sends)
        except (ValueError, UsageError, OSError) as exc:
            for _, files in prepared:  # nothing was sent: leave nothing behind
                shutil.rmtree(files.directory, ignore_errors=True)
            if isinstance(exc, UsageError | OSError):
                raise
            name = prepared[-1][0].name if len(prepared) == len(jobs) else jobs[len(prepared)].name
            raise UsageError(f"job {name!r} cannot be submitted to {self.name}: {exc}") from exc
        handles: dict[int, JobHandle] = {}
        refusals: list[tuple[_Send, Unsent]] = []
        for send in sends:
            try:
                base = self._send(send.argv, send.key, send.directory)
            except Unsent as exc:
                if exc.refused:
                    # For this job's own reasons: the jobs handed over with it still go
                    # (tests/faults/test_snakemake_refused.py, the refused job first),
                    # and each refused job keeps its own error.
                    refusals.append((send, exc))
                    continue
                raise _partial(prepared, handles, send, exc, refusals) from exc
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
        if refusals:
            first, why = refusals[0]
            raise _partial(prepared, handles, first, why, refusals[1:]) from why
        return [handles[n] for n in range(len(prepared))]

    def _plan(self, prepared: Sequence[tuple[JobSpec, JobFiles]], batch: Sequence[int]) -> _Send:
        """The submission of one batch, argv built and checked; nothing is sent."""
        if len(batch) == 1:
            spec, files = prepared[batch[0]]
            key = submission_key(files.directory)
            argv = self._submit_argv(spec, files, key)
            return _Send(tuple(batch), tuple(argv), key, files.directory, array=False)
        members = [prepared[n] for n in batch]
        array = write_array(
            self.work_dir, [files for _, files in members], self._ARRAY_INDEX, self._ARRAY_FIRST
        )
        first, apart = array_shape(members)
        key = submission_key(array.directory)
        argv = self._array_argv(first, array, len(members), apart, key)
        return _Send(tuple(batch), tuple(argv), key, array.directory, array=True)

    def _remember_keys(
        self, prepared: Sequence[tuple[JobSpec, JobFiles]], sends: Sequence[_Send]
    ) -> None:
        """Where each caller's key goes, on disk before anything is sent (see :meth:`find`)."""
        for send in sends:
            for index, n in enumerate(send.positions):
                spec, files = prepared[n]
                if spec.key is not None:
                    array = send.directory if send.array else None
                    record = KeyRecord(spec.name, files.directory, files.stdout, files.stderr,
                                       array, index)  # fmt: skip
                    self._index.remember_key(spec.key, record)

    def find(self, keys: Sequence[str]) -> dict[str, JobHandle]:
        """The jobs carrying these caller keys (``JobSpec.key``), by key: one listing of
        every submission key the scheduler shows (Slurm: ``squeue`` by comment; PBS Pro:
        ``qstat -x`` by ``SEQERA_SUBMISSION``; Torque: ``qstat`` by job name), plus one
        history call (Slurm: ``sacct``) for jobs that never started and left the listing.
        A key the work directory has no record of never went out; a job that ran is also
        found by its start mark. A found job is polled as usual, but not sent again after
        a node failure (its spec stayed with the process that submitted it).

        Raises:
            NoLookup: this scheduler has no listing of submission keys.
            SchedulerError: the scheduler did not answer; nothing can be concluded yet.
        """
        records = {k: r for k in dict.fromkeys(keys) if (r := self._index.keyed(k)) is not None}
        if not records:
            return {}
        listed = self._keys()  # NoLookup where the scheduler has no such listing
        # a listing, safe to repeat: a busy controller's "Socket timed out" is asked again
        # (with the retry policy's backoff), or a rerun's first lookup fails every job it
        # would have adopted; submission's own checks ask once per attempt (see _send)
        delays = self.retry.delays()
        while listed is None and (delay := next(delays, None)) is not None:
            self._sleep(delay)
            listed = self._keys()
        if listed is None:
            raise SchedulerError(f"{self.name} did not list its jobs' submission keys")
        if any(latest_run(listed, r) is None for r in records.values()):
            # a job script is written before its job is sent: the history from then on
            since = min(_written(r.directory / "job.sh") for r in records.values())
            listed = {**self._forgotten_keys(since - _CLOCK_SKEW), **listed}
        found: dict[str, JobHandle] = {}
        for key, record in records.items():
            base = latest_run(listed, record)
            if base is None:
                continue
            native_id = self._element_id(base, record.index) if record.array else base
            self._index.remember(native_id, record.directory)
            found[key] = JobHandle(self.name, native_id, record.name, str(record.stdout),
                                   str(record.stderr))  # fmt: skip
        return found

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
                try:
                    listed = self._keys()
                except NoLookup:
                    listed = None
                answered = listed is not None
                # Not listed (any more)? A job that ran marked its directory on starting:
                # looked at after the listing, a job cannot slip between the two.
                found = (listed or {}).get(key) or started_id(directory)
                if found:
                    return found
                delay = next(delays, None)
                if delay is None:
                    raise Unsent("submission failed", result, unknown=not answered)
                self._sleep(delay)
                if answered:
                    break  # the scheduler says it has no such job: send it again

    def _prepare(self, spec: JobSpec) -> JobFiles:
        return prepare_job(self.work_dir, spec)


def _written(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # gone: ask for the last day
        return time.time() - 86400
