"""A run that resumes what a dead one left: adopt its jobs instead of sending copies.

Every job an engine sends carries a submission key made from what the job *is*
(:func:`job_key`: the workflow's directory, the rule or tool, its outputs or output
directory, the attempt), never from the run's random id, so the run after a crash asks
for the same keys. At start, :meth:`Resume.orphans` reads the ledgers of runs that died
(``_ledger``) and asks the backend once (:meth:`~seqera_core.backends.Backend.find`)
where their jobs are. Before sending any job, :meth:`Resume.submit` looks its key up
there: a job of the dead run that is still queued or running, or that succeeded, is
adopted (its handle returned, polled like any other, nothing sent); one that failed or
was cancelled is sent again (nobody saw that failure, and a rerun is how a user asks
for another try, as plain Snakemake and cwltool run a failed step again).

A key the dead run had seen end is not adopted unless the engine says it never took the
result (``unfinished``: Snakemake's incomplete marker still on the job's outputs), so a
forced rerun (``snakemake --forcerun``) runs the job again as asked.

What the dead runs left and this run neither adopted nor saw end is cancelled by
:meth:`Resume.cancel_orphans` where the engine cannot use it (cwltool without
``--cachedir``, whose output directories are new each run; whatever Snakemake did not
ask for by the end of the run), so no job of a dead run keeps running beside a new one.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path

from attrs import frozen

from ..backends.base import Backend, JobHandle, JobSpec, JobState, NoLookup
from ..backends.batch import SubmitError
from ..errors import SeqeraError
from ._ledger import Entry, Ledger

__all__ = ["Orphan", "Resume", "job_key"]


def job_key(engine: str, *parts: object) -> str:
    """A submission key for what a job is: ``ENGINE-`` and 32 hex digits of a hash of
    ``parts`` (paths, names, numbers; lists of them), the same in every run."""
    text = json.dumps([engine, *parts], default=str, sort_keys=True, separators=(",", ":"))
    return f"{engine}-{hashlib.sha256(text.encode()).hexdigest()[:32]}"


@frozen
class Orphan:
    """A job a dead run sent: its key, what the ledger kept of it (``name``,
    ``workdir``, ``stdout``, ``stderr``), whether that run saw it end, and where the
    backend found it (None: it never reached the scheduler, or is gone from every
    record)."""

    key: str
    meta: Mapping[str, str]
    done: bool
    handle: JobHandle | None

    @property
    def workdir(self) -> Path | None:
        """The directory the job ran in, if it had one of its own."""
        value = self.meta.get("workdir")
        return Path(value) if value else None


def _meta(spec: JobSpec) -> dict[str, str]:
    # the logs too: an engine adopting a job whose files it must fetch (S3) writes them
    kept = {"name": spec.name, "workdir": spec.workdir, "stdout": spec.stdout,
            "stderr": spec.stderr}  # fmt: skip
    return {k: v for k, v in kept.items() if v}


class Resume:
    """One run's side of the ledger: its own keys, the dead runs' jobs, and adoption.

    Args:
        ledger: this run's ledger (it found the orphans when opened).
        backend: the run's backend (a function: opened on first use).
        warn: where a lookup that failed is said.
    """

    def __init__(
        self, ledger: Ledger, backend: Callable[[], Backend], warn: Callable[[str], None]
    ) -> None:
        self._ledger = ledger
        self._backend = backend
        self._warn = warn
        self._found: dict[str, Orphan] | None = None
        self._taken: set[str] = set()  # orphans adopted or cancelled by this run
        self._keys: dict[str, str] = {}  # native id -> key, for this run's jobs
        self._lock = threading.Lock()

    # -- at start ---------------------------------------------------------------------

    def orphans(self) -> list[Orphan]:
        """The dead runs' jobs, each with the handle the backend found it under; one
        lookup for all of them, made on the first call.

        Raises:
            SeqeraError: the scheduler did not answer (ask again later; send nothing).
        """
        with self._lock:
            if self._found is None:
                self._found = self._lookup(self._ledger.orphans)
            return [o for k, o in self._found.items() if k not in self._taken]

    def _lookup(self, entries: Mapping[str, Entry]) -> dict[str, Orphan]:
        if not entries:
            return {}
        try:
            handles = self._backend().find(list(entries))
        except NoLookup as exc:
            # nothing can be concluded: no job is adopted, and none is cancelled blindly
            self._warn(f"{len(entries)} jobs of an earlier run cannot be looked up: {exc}")
            handles = {}
        return {k: Orphan(k, e.meta, e.done, handles.get(k)) for k, e in sorted(entries.items())}

    # -- sending ----------------------------------------------------------------------

    def submit(self, specs: Sequence[JobSpec], unfinished: Collection[str] = ()) -> list[JobHandle]:
        """Adopt what a dead run left for these specs' keys, send the rest; handles in order.

        Raises:
            SubmitError: part of the batch went out; its positions count adopted jobs too.
            SeqeraError: nothing was sent (the orphans could not be looked up, or the
                backend refused the whole batch).
        """
        found = {o.key: o for o in self.orphans()}
        candidates = [
            (n, found[spec.key])
            for n, spec in enumerate(specs)
            if spec.key in found
            and found[spec.key].handle is not None
            and (not found[spec.key].done or spec.key in unfinished)
        ]
        adopted: dict[int, JobHandle] = {}
        if candidates:
            handles = [o.handle for _, o in candidates if o.handle is not None]
            for (n, _), status in zip(candidates, self._backend().poll(handles), strict=True):
                if status.state not in (JobState.FAILED, JobState.CANCELLED):
                    adopted[n] = status.handle
        rest = [n for n in range(len(specs)) if n not in adopted]
        with self._lock:
            self._taken.update(str(specs[n].key) for n in adopted)
            for n, handle in adopted.items():
                self._keys[handle.native_id] = str(specs[n].key)
            self._ledger.sent(
                (str(specs[n].key), _meta(specs[n]))
                for n in [*adopted, *rest]
                if specs[n].key is not None
            )
        try:
            sent = self._backend().submit([specs[n] for n in rest]) if rest else []
        except SubmitError as exc:
            self._own(specs, [rest[p] for p in exc.positions], exc.submitted)
            raise SubmitError(
                str(exc),
                exc.result,
                [*adopted.values(), *exc.submitted],
                positions=[*adopted, *(rest[p] for p in exc.positions)],
                unknown=[rest[p] for p in exc.unknown],
                errors={rest[p]: why for p, why in exc.errors.items()},  # each job's own
            ) from exc
        self._own(specs, rest, sent)
        placed = dict(adopted)
        placed.update(zip(rest, sent, strict=True))
        return [placed[n] for n in range(len(specs))]

    def _own(
        self, specs: Sequence[JobSpec], positions: Iterable[int], handles: Iterable[JobHandle]
    ) -> None:
        with self._lock:
            for n, handle in zip(positions, handles, strict=True):
                key = specs[n].key
                if key is not None:
                    self._keys[handle.native_id] = key

    def adopt(self, orphans: Iterable[Orphan]) -> None:
        """Take these orphans as this run's own (an engine that waits for them itself)."""
        orphans = [o for o in orphans if o.handle is not None]
        with self._lock:
            self._taken.update(o.key for o in orphans)
            for orphan in orphans:
                assert orphan.handle is not None
                self._keys[orphan.handle.native_id] = orphan.key
            self._ledger.sent((o.key, o.meta) for o in orphans)

    # -- ending -----------------------------------------------------------------------

    def settled(self, handles: Iterable[JobHandle]) -> None:
        """Note that these jobs ended (or were cancelled) and this run saw it."""
        with self._lock:
            self._ledger.done(k for h in handles if (k := self._keys.get(h.native_id)))

    def cancel_orphans(self, which: Callable[[Orphan], bool] | None = None) -> list[JobHandle]:
        """Cancel the dead runs' jobs this run has not adopted (those ``which`` picks);
        returns the handles cancelled. A job that has already ended is left alone.

        Raises:
            SeqeraError: the scheduler did not answer; nothing is known to be cancelled.
        """
        picked = [o for o in self.orphans() if o.handle is not None and not o.done
                  and (which is None or which(o))]  # fmt: skip
        handles = [o.handle for o in picked if o.handle is not None]
        if handles:
            backend = self._backend()
            live = [s.handle for s in backend.poll(handles) if not s.state.finished]
            if live:
                backend.cancel(live)
            handles = live
        with self._lock:
            self._taken.update(o.key for o in picked)
        return handles

    def close(self, backend: Backend | None) -> None:
        """Carry the orphans left alone that still run or wait (one poll of ``backend``,
        the run's, still open) into this run's ledger; release the ledgers."""
        with self._lock:
            found = self._found
            if found is None:
                # never looked at: they stay what they were, orphans, for the next run
                left = [Entry(k, e.meta) for k, e in self._ledger.orphans.items() if not e.done]
                self._ledger.close(left)
                return
            alone = [o for k, o in found.items()
                     if k not in self._taken and not o.done and o.handle is not None]  # fmt: skip
        handles = [o.handle for o in alone if o.handle is not None]
        if handles and backend is not None:
            try:
                statuses = backend.poll(handles)
            except SeqeraError as exc:  # not known to have ended: kept for the next run
                self._warn(f"the jobs an earlier run left could not be polled: {exc}")
            else:
                alone = [o for o, s in zip(alone, statuses, strict=True) if not s.state.finished]
        with self._lock:
            self._ledger.close([Entry(o.key, o.meta) for o in alone])
