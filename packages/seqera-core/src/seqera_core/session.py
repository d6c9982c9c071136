"""One run, wired once: the object every entry point builds and closes.

``seqera run``, ``snakemake --executor seqera``, ``cwltool-seqera`` and the sidecar each
build one :class:`Session` from a :class:`~seqera_core.config.Config` (user file < project
file < ``SEQERA_*`` < engine settings < flags, see :mod:`seqera_core.config`) and their
engine's name. The session owns what a run opens (the platform, the backend from the
registry, the resolver chain, the history store, the run labels) and closes all of it in
:meth:`Session.close`; an adapter maps its engine's jobs to requests and specs and calls
:meth:`prepare`, :meth:`submit`, :meth:`poll`, :meth:`cancel` and :meth:`record`, and
never opens a backend, a store or a resolver itself (as httpx's ``Client`` owns its pool).

Every finished attempt is recorded (cancelled ones with their cause, so the report can
count them) through one path (:func:`~seqera_core.outcomes.finished_record`) and the
run's :class:`~seqera_core._recorder.Recorder`, whose store never fails a job.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import platforms
from ._attempts import Attempts, Finished
from ._opening import Opening, WorkDir
from ._recorder import Recorder
from .backends.base import Backend, JobHandle, JobSpec, JobStatus
from .backends.registry import BackendEntry, entry
from .config import Config
from .errors import HistoryError, UsageError
from .history import History
from .labels import run_labels
from .models import ResourceRequest
from .outcomes import finished_record
from .pipeline import Prepared
from .platforms import Platform
from .resolvers import PredictiveResolver, Resolver, configured
from .resume import Ledger, Orphan, Resume
from .squash import SquashPolicy

if TYPE_CHECKING:
    from .backends.local._forking import ForkServer

__all__ = ["Finished", "Session", "squash_policy"]

_LOG = logging.getLogger("seqera_core.session")


def squash_policy(config: Config, platform: Platform | None = None) -> SquashPolicy:
    """The platform's squash policy (off without one), with the config's ``squash.*`` over it."""
    base = platform.squash if platform is not None else SquashPolicy()
    return base.merged(config.section("squash"))


class Session:
    """One run of one engine: platform, backend, resolvers, history and labels, closed once.

    Args:
        config: the merged settings (the adapter maps its own flags onto config keys).
        engine: the engine's name as labels and the history know it (``snakemake``,
            ``cwltool``, ``nextflow``, ``seqera-run``).
        work_dir: where the backend keeps job scripts and logs (visible to compute nodes
            on a cluster), or a function of the registry entry giving it; the backend's
            own default when ``None``.
        run_id: the run's id in labels and the history (a new UUID by default).
        metadata: run metadata for the automatic labels (see :data:`labels.METADATA`;
            ``engine`` defaults to ``engine``, and ``run-id`` is labelled only if given).
        backend_options: the backend's own constructor keywords over its config section
            (``--seqera-backend-option`` pass-through to a batch scheduler).
        preload: Python entry points a squashed allocation's launcher loads once.
        fork_server: a fork server of ``preload`` the engine started early, for a backend
            that forks (local); the session closes it if the backend does not take it.
        sizing: builds the history's resolver (default: the learning right-sizer).
        label_prefix: the prefix of automatic labels (``snakemake/run-id``).
        record_to: where finished attempts are recorded when config names no history
            (an engine's entry point passes ``history.DEFAULT_HISTORY``, the home ``seqera
            report`` and the sidecar read by default). Recorded only: jobs are sized from
            a history only when the user names one (``history`` in config, a flag), so a
            run never starts sizing from what earlier runs happened to leave there.
        warn: where warnings go (default: this module's logger); the engine's logger
            keeps them in its own log.
        ledger: where the run keeps its ledger of submission keys (``runs/`` of the
            engine's work directory), so the run after a crash adopts its jobs (see
            :mod:`seqera_core.resume`); none: nothing is adopted. A backend that keeps its
            jobs on disk to be adopted (local) keeps them beside it, in ``NAME-jobs/``,
            unless its settings name a ``state`` directory.
    """

    def __init__(
        self,
        config: Config,
        engine: str,
        *,
        work_dir: WorkDir = None,
        run_id: str | None = None,
        metadata: Mapping[str, str] | None = None,
        backend_options: Mapping[str, Any] | None = None,
        preload: Sequence[str] = (),
        fork_server: ForkServer | None = None,
        sizing: Callable[[History], Resolver] | None = None,
        label_prefix: str | None = None,
        warn: Callable[[str], None] | None = None,
        ledger: Path | None = None,
        record_to: str | None = None,
    ) -> None:
        self.config = config
        self.engine = engine
        self.run_id = run_id or str(uuid.uuid4())
        self._warn = warn or _LOG.warning
        self._fork_server = fork_server
        self._backend: Backend | None = None
        self._attempts = Attempts()  # each task's last attempt and failure
        self._lock = threading.Lock()
        self._closed = False
        self._recorder: Recorder | None = None
        self.resolvers: list[Resolver] = []
        self._resume: Resume | None = None
        path = config.get("platform")
        self.platform: Platform | None = platforms.load(path) if path else None
        name = str(config.get("backend"))
        if self.platform is not None and config.sources.get("backend") == "default":
            # nobody chose a backend: the platform's route, else its scheduler
            name = "route" if self.platform.route else self.platform.scheduler
        self.entry: BackendEntry = entry(name)
        self.squash = squash_policy(config, self.platform)
        self._opening = Opening(config, self.platform, self.squash, work_dir,
                                dict(backend_options or {}), tuple(preload), ledger)  # fmt: skip
        self.labels = run_labels(
            label_prefix or engine,
            {"engine": engine, **(metadata or {})},
            config.get("labels"),
            auto=config.get("auto_labels", "all"),
        )
        try:
            if ledger is not None:
                run = "".join(c if c.isalnum() or c in "-_." else "_" for c in self.run_id)
                self._resume = Resume(Ledger(ledger, run), lambda: self.backend, self._warn)
            location = config.get("history")
            self._recorder = Recorder(str(location) if location else None, record_to, self._warn)
            self.resolvers = configured(config)
            if location and self.history is not None:
                shrink = bool(config.get("sizing.shrink_self_sizing", False))
                history = self.history
                self.resolvers.append(
                    sizing(history)
                    if sizing is not None
                    else PredictiveResolver(history, shrink_self_sizing=shrink)
                )
        except BaseException:
            self.close()
            raise

    # -- what the run holds ---------------------------------------------------------------

    @property
    def history(self) -> History | None:
        """The run's history store (``None``: none, or one still locked since the start)."""
        return None if self._recorder is None else self._recorder.history

    @property
    def backend_name(self) -> str:
        """The backend the run dispatches to (the registry's name)."""
        return self.entry.name

    @property
    def work_dir(self) -> Path | None:
        """Where the backend keeps job scripts and logs (``None``: its own default)."""
        return self._opening.directory(self.entry)

    @property
    def backend_settings(self) -> dict[str, Any]:
        """The backend's settings: the platform's ``settings`` (the routing backend's: its
        ``route:``), then its config section."""
        return self._opening.settings(self.entry)

    @property
    def backend(self) -> Backend:
        """The run's backend, opened on first use (``explain`` never opens one)."""
        with self._lock:
            if self._closed:
                raise UsageError("the session is closed")
            if self._backend is None:
                server, self._fork_server = self._fork_server, None
                try:
                    self._backend = self._opening.run_backend(self.entry, server, self._expected())
                finally:
                    if self._backend is None and server is not None:
                        server.close()
                # a backend with notes for the user (Slurm's --tmp, account) says them here
                inner = getattr(self._backend, "inner", self._backend)
                if callable(set_warn := getattr(inner, "set_warn", None)):
                    set_warn(self._warn)
            return self._backend

    def _expected(self) -> Callable[[JobSpec], float | None] | None:
        """Expected run times from the history (the longest run of a job's process)."""
        if self.history is None:
            return None
        from .backends.squash import history_runtime

        return history_runtime(self.history)

    # -- one task's way -------------------------------------------------------------------

    def prepare(self, request: ResourceRequest, *, task: str | None = None) -> Prepared:
        """Limits, platform (queue chosen; an impossible task comes back with errors),
        the resolver chain, and the labels: see :func:`seqera_core.pipeline.prepare`.

        ``task`` is the engine's key for the task, the same for each of its attempts (the
        ``task_id`` it records them under): after a failed attempt the next one gets what
        :mod:`seqera_core.retries` says it needs, and its note says so.
        """
        return self._attempts.prepare(
            request,
            task,
            platform=self.platform,
            resolvers=self.resolvers,
            run_labels=self.labels,
        )

    def rescue(self, task: str) -> bool:
        """Whether the task's last attempt, which failed, was failed by the optimiser (a
        resolver sized it below what it declared and it ran out of exactly that): then
        the engine sends it again at once, whatever its own retry setting, and
        :meth:`prepare` gives it no less than it declared. True once per task."""
        return self._attempts.rescue(task)

    def submit(
        self, specs: Sequence[JobSpec], *, unfinished: Collection[str] = ()
    ) -> list[JobHandle]:
        """Submit every job in one backend call; their handles in the same order.

        With a ledger, a job whose key (``JobSpec.key``) a dead run sent and left queued,
        running or succeeded is adopted instead (its handle returned, nothing sent); see
        :mod:`seqera_core.resume`. ``unfinished``: keys whose result the engine never took
        although the dead run saw the job end (adopted too).

        Raises:
            SubmitError: part of the batch went out; ``submitted`` holds those handles.
            SeqeraError: nothing was submitted.
        """
        if self._resume is None:
            return self.backend.submit(specs)
        return self._resume.submit(specs, unfinished)

    def orphans(self) -> list[Orphan]:
        """The jobs dead runs over this ledger left and this run has not adopted, each
        with the handle the backend found it under (one lookup, on the first call); none
        without a ledger.

        Raises:
            SeqeraError: the scheduler did not answer.
        """
        return [] if self._resume is None else self._resume.orphans()

    def adopt(self, orphans: Iterable[Orphan]) -> None:
        """Take these orphans as this run's (an engine that waits for them itself)."""
        if self._resume is not None:
            self._resume.adopt(orphans)

    def cancel_orphans(self, which: Callable[[Orphan], bool] | None = None) -> list[JobHandle]:
        """Cancel the orphans (those ``which`` picks) this run has not adopted and that
        still run or wait; returns their handles.

        Raises:
            SeqeraError: the scheduler did not answer.
        """
        return [] if self._resume is None else self._resume.cancel_orphans(which)

    def poll(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        """Every handle's status with one native call."""
        return self.backend.poll(handles)

    def cancel(self, handles: Sequence[JobHandle]) -> None:
        """Cancel every job with one native call where the scheduler allows it."""
        if handles:
            self.backend.cancel(handles)
            if self._resume is not None:
                self._resume.settled(handles)

    def settled(self, handles: Iterable[JobHandle]) -> None:
        """Note in the ledger that the run saw these jobs end (:meth:`record` does it for
        the attempts it records)."""
        if self._resume is not None and not self._closed:
            self._resume.settled(handles)

    def logs(self, handle: JobHandle) -> str:
        """The job's output so far."""
        return self.backend.logs(handle)

    def record(self, finished: Iterable[Finished]) -> int:
        """Record finished attempts in the history (none without one); returns how many
        rows were written, including earlier ones that had waited. Never raises: a store
        that fails keeps the rows for the next call and says so once per failure."""
        finished = [item for item in finished if item.status.state.finished]
        if self._closed:
            # An engine's worker thread whose job ended (or was cancelled by a SIGTERM's
            # close) after the run closed: the ledger and history are shut; said, not raised.
            if finished:
                self._warn(f"{len(finished)} attempts ended after the run closed; not recorded")
            return 0
        self._attempts.remember(finished)
        self.settled(item.status.handle for item in finished)
        if not self.records_history:
            return 0
        assert self._recorder is not None  # records_history says there is one
        return self._recorder.record(
            [
                finished_record(
                    item.request,
                    item.status,
                    run_id=item.run_id or self.run_id,
                    engine=self.engine,
                    task_id=item.task_id,
                )
                for item in finished
            ]
        )

    def summary(self, limit: int = 3) -> list[str]:
        """A few lines on what this run used and wasted (the ``limit`` worst processes, the
        right-sizer's saving); none without a history or before any task finished. Rows
        still waiting for a store that failed earlier are offered to it first."""
        self.record([])  # rows that waited for the store count too: offered once more
        if self.history is None:
            return []
        from .report import summary_lines  # the figures need no plotting library

        try:
            return summary_lines(self.history, self.run_id, limit)
        except UsageError:
            return []  # no finished task of this run (yet)
        except HistoryError as exc:
            self._warn(f"no efficiency summary: {exc}")
            return []

    def write_report(self, path: str | Path) -> Path:
        """Write this run's HTML report (``seqera report``'s page) to ``path``; returns it.

        Raises:
            UsageError: no history, no finished task of this run, or no Plotly
                (``pip install 'seqera-core[report]'``).
        """
        self.record([])  # rows that waited for the store belong in the page too
        if self.history is None:
            raise UsageError("a report needs a history: set history in seqera config")
        from .report import write_report

        return write_report(self.history, [self.run_id], path, platform=self.platform)

    @property
    def records_history(self) -> bool:
        """Whether finished attempts go to a history (one open now, or one locked at start)."""
        return self._recorder is not None and self._recorder.active

    @property
    def unrecorded(self) -> int:
        """Finished attempts still waiting for the history."""
        return 0 if self._recorder is None else self._recorder.waiting

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Flush waiting history rows, close the backend (a squashed one tells its launchers
        to drain; the local one ends its jobs), the resolvers and the history. Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            backend, self._backend = self._backend, None
            server, self._fork_server = self._fork_server, None
        if server is not None:  # never handed to a backend
            server.close()
        try:
            if self._resume is not None:
                self._resume.close(backend)
            if backend is not None:
                backend.close()
        finally:
            for resolver in self.resolvers:
                try:
                    resolver.close()
                except Exception as exc:  # closing one must not leave the others open
                    self._warn(f"resolver {resolver.name}: {exc}")
            if self._recorder is not None:
                self._recorder.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
