"""The executor: each ready job through seqera-core's pipeline and onto the chosen backend.

One ``submit`` call for all the jobs Snakemake hands over at once, one ``poll`` call per
status cycle for every active job, one ``cancel`` call for all of them.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import time
import uuid
from collections.abc import AsyncGenerator
from pathlib import Path

from snakemake_interface_common.exceptions import WorkflowError
from snakemake_interface_executor_plugins.executors.base import SubmittedJobInfo
from snakemake_interface_executor_plugins.executors.remote import RemoteExecutor
from snakemake_interface_executor_plugins.jobs import JobExecutorInterface
from snakemake_interface_executor_plugins.logging import LoggerExecutorInterface
from snakemake_interface_executor_plugins.settings import SharedFSUsage
from snakemake_interface_executor_plugins.workflow import WorkflowExecutorInterface

from seqera_core.backends import (
    JobSpec,
    JobState,
    JobStatus,
    SquashBackend,
    SubmitError,
    history_runtime,
)
from seqera_core.errors import SeqeraError
from seqera_core.outcomes import failure_message
from seqera_core.session import Finished

from ._configure import open_session
from ._jobcommand import describe, snakemake_image
from ._jobspec import JobLayout, job_spec
from ._logs import DEFAULT_DAYS, LogRetention, log_files
from ._loop import IdleWait, exiting
from ._restart import Interrupts, run_onerror, unfinished
from ._staging import staging_refusal
from .resources import job_request
from .settings import ExecutorSettings

__all__ = ["Executor"]


class Executor(RemoteExecutor):
    """``snakemake --executor seqera``."""

    def __init__(self, workflow: WorkflowExecutorInterface, logger: LoggerExecutorInterface):
        # Woken by a submission and at shutdown: made first, as the base class starts the
        # status thread (whose idle wait it is, see sleep()) before __post_init__.
        self._idle = IdleWait()
        self._said: set[tuple[str | None, str]] = set()
        super().__init__(workflow, logger)

    def __post_init__(self) -> None:
        settings = self.workflow.executor_settings or ExecutorSettings()
        try:
            self._setup(settings)
        except SeqeraError as exc:
            raise WorkflowError(f"seqera executor: {exc}") from None

    def _setup(self, settings: ExecutorSettings) -> None:
        workdir = Path(self.workflow.workdir_init)
        jobdir = (settings.jobdir or workdir / ".snakemake" / "seqera").absolute()
        run_id = str(uuid.uuid4())
        server = settings.take_fork_server()  # forked while Snakemake started up
        try:
            self._session = open_session(settings, workdir, jobdir, run_id, server, self._warn)
        except BaseException:
            if server is not None:
                server.close()
            raise
        self._run_id = run_id
        self._settings = settings
        self._jobdir = jobdir
        days = settings.delete_logfiles_older_than
        self._retention = LogRetention(
            jobdir / "logs",
            keep_successful=settings.keep_successful_logs,
            older_than_days=DEFAULT_DAYS if days is None else days,
        )
        self._backend_name = self._session.backend_name
        self._squashed = isinstance(self._session.backend, SquashBackend)
        # Jobs go as argv where they can start as forks of a preloaded Snakemake.
        self._forks = self._squashed or self._session.entry.forks
        self._wait = getattr(self._session.backend, "wait", None)  # LocalBackend.wait
        backend = self._session.backend
        if isinstance(backend, SquashBackend):
            # a squash poll reads files: finished jobs are reported sooner
            every = self.workflow.remote_execution_settings.seconds_between_status_checks
            self._next_seconds_between_status_checks = min(every, backend.status_every)
            if self._session.history is not None:  # pack by how long each rule took before
                backend.expected = history_runtime(self._session.history)
        try:  # at start: one lookup of what a dead run over this directory left
            left = len(self._session.orphans())
        except SeqeraError as exc:
            self.logger.warning(f"seqera: the jobs an earlier run left are not known: {exc}")
            left = 0
        if left:
            self.logger.info(f"seqera: {left} jobs an earlier run left are adopted if asked for")
        self._interrupts = Interrupts()  # SIGHUP cancels as Ctrl-C does; see _restart
        self._image = settings.image or snakemake_image()
        if self._backend_name == "local" or self._session.entry.composite:
            # A local poll is a look at this process's own table: no need to wait long
            # (a routing backend asks its schedulers at most every few seconds, and sees
            # a local job's end within its status_every).
            every = self.workflow.remote_execution_settings.seconds_between_status_checks
            self._next_seconds_between_status_checks = min(
                every, float(getattr(backend, "status_every", 1.0)), 1.0
            )
        # routing with a cloud candidate: a job goes there only if Snakemake stages its files
        self._unshared = tuple(getattr(backend, "unshared", ()))
        self._unstaged = staging_refusal(self.workflow.storage_settings)
        if self._unshared and self._unstaged:
            self.logger.info(f"seqera: no job goes to {', '.join(self._unshared)}: "
                             f"{self._unstaged}")  # fmt: skip
        self._layout = JobLayout(
            jobdir=jobdir,
            run_id=run_id,
            shared=self._session.entry.shared_fs,
            apart=self._backend_name in ("pbs", "torque"),
            forks=self._forks,
            image=self._image,
            staged=bool(self._unshared) and self._unstaged is None,
        )
        if not self._session.entry.shared_fs and (
            SharedFSUsage.INPUT_OUTPUT in self.workflow.storage_settings.shared_fs_usage
        ):
            raise WorkflowError(
                f"seqera executor: backend {self._backend_name} has no shared filesystem; run "
                "with --default-storage-provider (e.g. s3) and --shared-fs-usage none"
            )

    # -- submission ------------------------------------------------------------------

    def run_job(self, job: JobExecutorInterface) -> None:
        self.run_jobs([job])

    def run_jobs(self, jobs: list[JobExecutorInterface]) -> None:
        """Every job Snakemake hands over at once goes out in one backend call."""
        ready: list[tuple[JobExecutorInterface, JobSpec]] = []
        for job in jobs:
            self.run_job_pre(job)
            spec = self._spec(job)
            if spec is not None:
                ready.append((job, spec))
        if not ready:
            return
        marked = unfinished(self.workflow.persistence, [job for job, _ in ready])
        again = {str(spec.key) for job, spec in ready if job.jobid in marked}
        try:
            handles = self._session.submit([spec for _, spec in ready], unfinished=again)
            sent = list(zip(ready, handles, strict=True))
        except SubmitError as exc:
            # The jobs that went out run: keep them (exc.positions says which, arrays can
            # send them out of order), fail the others.
            kept = dict(zip(exc.positions, exc.submitted, strict=True))
            sent = [(ready[n], handle) for n, handle in sorted(kept.items())]
            for n, (job, _) in enumerate(ready):
                if n not in kept:  # its own error, not the first refused job's
                    why = exc.error_of(n)
                    self.report_job_error(SubmittedJobInfo(job), msg=f"submission failed: {why}. ")
        except (SeqeraError, OSError, ValueError) as exc:
            sent = []
            for job, _ in ready:
                self.report_job_error(SubmittedJobInfo(job), msg=f"submission failed: {exc}. ")
        for (job, spec), handle in sent:
            aux = {"handle": handle, "request": spec.request, "logs": (spec.stdout, spec.stderr)}
            self.report_job_submission(
                SubmittedJobInfo(job, external_jobid=handle.native_id, aux=aux)
            )
        self._idle.wake()

    def _spec(self, job: JobExecutorInterface) -> JobSpec | None:
        try:
            request, warnings = job_request(
                job, queue=self._settings.queue, account=self._settings.account
            )
            prepared = self._session.prepare(request, task=str(job.jobid))
        except SeqeraError as exc:
            self.report_job_error(SubmittedJobInfo(job), msg=f"invalid resources: {exc}. ")
            return None
        for warning in warnings:
            if (request.process, warning) in self._said:
                continue  # once per rule, not once per job
            self._said.add((request.process, warning))
            self.logger.warning(f"seqera: rule {request.process}: {warning}")
        if not prepared.ok:
            assert prepared.report is not None
            reason = "; ".join(prepared.report.errors + prepared.report.suggestions)
            self.report_job_error(
                SubmittedJobInfo(job), msg=f"not submitted, no queue can run it: {reason}. "
            )
            return None
        retry = [note for note in prepared.notes if note.startswith("retry after")]
        if retry:  # what this attempt really gets, in Snakemake's own log
            self.logger.info(
                f"seqera: job {job.jobid} ({job.name}) attempt {job.attempt}: {retry[-1]}; "
                f"{describe(prepared)}"
            )
        self.logger.debug(f"seqera: job {job.jobid} {job.name}: {describe(prepared)}")
        text = self.format_job_exec(job)
        workdir = Path(self.workflow.workdir_init).absolute()
        return job_spec(job, prepared, self._layout, text=text, env=self.envvars(), workdir=workdir)

    # -- status ----------------------------------------------------------------------

    async def check_active_jobs(
        self, active_jobs: list[SubmittedJobInfo]
    ) -> AsyncGenerator[SubmittedJobInfo, None]:
        """One backend poll for every active job, within Snakemake's status rate limit."""
        if not active_jobs:
            return
        handles = [info.aux["handle"] for info in active_jobs]
        async with self.status_rate_limiter:
            try:
                statuses = self._session.poll(handles)
            except SeqeraError as exc:
                self.logger.warning(f"seqera: status query failed, retrying later: {exc}")
                for info in active_jobs:
                    yield info
                return
        ended = [(i, s) for i, s in zip(active_jobs, statuses, strict=True) if s.state.finished]
        self._record(ended)
        for info, status in zip(active_jobs, statuses, strict=True):
            if not status.state.finished:
                yield info
            elif status.state is JobState.SUCCEEDED:
                self.report_job_success(info)
                self._retention.succeeded(info.aux.get("logs", ()), self._warn)
            elif (rescued := self._rescued(info, status)) is not False:
                if rescued:
                    yield info  # sent again at once, under the same Snakemake job
            else:
                message = failure_message(status, info.aux["request"])
                # Snakemake appends its own hint right after the message.
                self.report_job_error(info, msg=f"{message}. ", aux_logs=self._log_files(status))

    def _warn(self, message: str) -> None:
        self.logger.warning(f"seqera: {message}")

    def _rescued(self, info: SubmittedJobInfo, status: JobStatus) -> bool | None:
        """Never a gate: a job the right-sizer gave less than it declared, killed for
        exactly that, goes out again at once at its declared size (whatever --retries
        says). True: sent again; False: not a rescue; None: its error is reported."""
        if not self._session.rescue(str(info.job.jobid)):
            return False
        why = failure_message(status, info.aux["request"])
        self.logger.warning(
            f"seqera: job {info.job.jobid} ({info.job.name}): {why}, with less than the rule "
            "declares (the right-sizer's size): sent again at once at its declared size"
        )
        spec = self._spec(info.job)  # reports the job's error itself when it cannot
        if spec is None:
            return None
        try:
            (handle,) = self._session.submit([spec])
        except (SeqeraError, OSError, ValueError) as exc:
            self.report_job_error(info, msg=f"submission failed: {exc}. ")
            return None
        info.aux.update(handle=handle, request=spec.request)
        return True

    def _record(self, ended: list[tuple[SubmittedJobInfo, JobStatus]]) -> None:
        self._session.record(
            Finished(info.aux["request"], status, task_id=f"{info.job.jobid}")
            for info, status in ended
        )

    def _log_files(self, status: JobStatus) -> list[str]:
        return log_files(status, self._session.logs, self._jobdir / "logs")

    async def sleep(self) -> None:
        """Until the next status check, cut short by a job's end where the backend says so."""
        self._idle.clear()  # before the looks: a submission or shutdown after them wakes it
        handles = [info.aux["handle"] for info in list(self.active_jobs) if info.aux]
        if not self.wait:  # shut down
            return
        if not handles:
            # Nothing to check: wait for the next submission (or the end), not a cadence.
            await self._idle.wait(self.next_seconds_between_status_checks)
        else:
            wait = getattr(self, "_wait", None)
            if callable(wait):
                await asyncio.to_thread(wait, handles, self.next_seconds_between_status_checks)
            else:
                await super().sleep()
        if exiting():
            await asyncio.get_running_loop().create_future()  # parked: see _loop.exiting

    def cancel(self) -> None:
        """Snakemake's way out on Ctrl-C (and on an error): every active job cancelled,
        then the executor shut down. After Ctrl-C (or SIGHUP) the run then ends at once
        with one line and 130 (129), as ``seqera run`` does, where Snakemake would go on
        to report the cancelled jobs as a failure (``At least one job did not complete
        successfully``, exit 1). The workflow's ``onerror`` handler runs first, as it does
        there. Further SIGINTs are ignored meanwhile."""
        interrupted = isinstance(sys.exc_info()[1], KeyboardInterrupt)
        self._interrupts.cancelling = True
        with self.lock:
            count = sum(1 for info in self.active_jobs if info.aux)
        try:
            super().cancel()
        finally:
            if not interrupted:
                self._interrupts.restore()
        if interrupted:
            signum = self._interrupts.signum
            how = "interrupted" if signum == signal.SIGINT else signal.Signals(signum).name
            self.logger.warning(f"seqera: {how}; the run's {count} active jobs cancelled")
            run_onerror(self.workflow, self.logger)
            raise SystemExit(self._interrupts.exit_status)

    def cancel_jobs(self, active_jobs: list[SubmittedJobInfo]) -> None:
        """Cancel every active job with one backend call."""
        handles = [info.aux["handle"] for info in active_jobs if info.aux]
        self._session.cancel(handles)

    def shutdown(self) -> None:
        if not self._interrupts.cancelling:  # else the run ends at once: see cancel()
            self._interrupts.restore()
        with self.lock:  # as the base class does, but before the wake-up: see sleep()
            self.wait = False
        self._idle.wake()
        super().shutdown()
        try:
            # what the dead run left and this one never asked for runs beside nothing
            self._session.cancel_orphans()
        except SeqeraError as exc:
            self.logger.warning(f"seqera: could not cancel an earlier run's jobs: {exc}")
        days = self._retention.older_than_days
        if deleted := self._retention.sweep(time.time(), self._warn):
            self.logger.info(f"seqera: {deleted} job logs older than {days} days deleted")
        try:
            self._report()
        finally:
            self._session.close()

    def _report(self) -> None:
        """The run's efficiency in a few lines, and its page where --seqera-report asks."""
        lines = self._session.summary()
        if lines:
            self.logger.info("seqera: " + "\nseqera: ".join(lines))
        if self._settings.report is None:
            return
        try:
            path = self._session.write_report(self._settings.report)
        except SeqeraError as exc:
            self.logger.warning(f"seqera: no report: {exc}")
            return
        self.logger.info(f"seqera: report of this run: {path.absolute()}")
