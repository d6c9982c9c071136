"""The executor: each ready job through seqera-core's pipeline and onto the chosen backend.

One ``submit`` call for all the jobs Snakemake hands over at once, one ``poll`` call per
status cycle for every active job, one ``cancel`` call for all of them.
"""

from __future__ import annotations

import asyncio
import getpass
import os
import shlex
import uuid
from collections.abc import AsyncGenerator, Sequence
from importlib import metadata
from pathlib import Path

import attrs
import yaml
from snakemake_interface_common.exceptions import WorkflowError
from snakemake_interface_executor_plugins.executors.base import SubmittedJobInfo
from snakemake_interface_executor_plugins.executors.remote import RemoteExecutor
from snakemake_interface_executor_plugins.jobs import JobExecutorInterface
from snakemake_interface_executor_plugins.settings import SharedFSUsage

from seqera_core import platforms
from seqera_core.backends import (
    Backend,
    JobSpec,
    JobState,
    JobStatus,
    SquashBackend,
    SubmitError,
    open_backend,
    squash_policy,
)
from seqera_core.config import Config, load_config
from seqera_core.errors import SeqeraError
from seqera_core.history import finished_record, open_history
from seqera_core.labels import run_labels
from seqera_core.pipeline import Prepared, prepare
from seqera_core.resolvers import PredictiveResolver, Resolver, close_all, configured
from seqera_core.units import format_bytes, format_seconds

from .resources import RUNNER_MEMORY, job_request
from .settings import ExecutorSettings

__all__ = ["Executor"]


def _labels(pairs: Sequence[str] | str | None) -> dict[str, str] | None:
    if not pairs:
        return None
    if isinstance(pairs, str):
        # From $SNAKEMAKE_SEQERA_LABELS, ConfigArgParse may hand over the list as its text:
        # "[project=x, team=y]" or "project=x,team=y".
        loaded = yaml.safe_load(pairs) if pairs.lstrip().startswith("[") else None
        pairs = [str(p) for p in loaded] if isinstance(loaded, list) else pairs.split(",")
    labels = {}
    for pair in pairs:
        key, sep, value = pair.strip().partition("=")
        if not sep or not key.strip():
            raise WorkflowError(f"--seqera-labels: {pair!r} is not KEY=VALUE (e.g. project=rnaseq)")
        labels[key.strip()] = value
    return labels


def _config(settings: ExecutorSettings) -> Config:
    flags = {
        "backend": settings.backend,
        "platform": None if settings.platform is None else str(settings.platform),
        "resolver.url": settings.resolver_url,
        "resolver.token": settings.resolver_token,
        "history": settings.history,
        "labels": _labels(settings.labels),
        "ecs.cluster": settings.ecs_cluster,
        "ecs.execution_role": settings.ecs_execution_role,
        "ecs.task_role": settings.ecs_task_role,
        "ecs.subnets": settings.ecs_subnets,
        "ecs.security_groups": settings.ecs_security_groups,
        "ecs.capacity_provider": settings.ecs_capacity_provider,
        "ecs.logs_group": settings.ecs_log_group,
        "ecs.region": settings.ecs_region,
        "squash.mode": settings.squash,
        "squash.max_jobs": settings.squash_max_jobs,
        "squash.max_time": settings.squash_max_time,
        "squash.cpus": settings.squash_cpus,
    }
    return load_config(environ=os.environ, cwd=Path.cwd(), home=Path.home(), flags=flags)


PRELOAD = ("snakemake.cli:get_argument_parser",)
# Shell syntax that makes a job command more than one program's argv.
_SHELL = frozenset({"&&", "||", ";", "|", "&", ">", ">>", "<", "(", ")"})


def _command(text: str, *, squashed: bool) -> tuple[str, ...]:
    """The job's argv: Snakemake's command line through a shell, or as the argv itself
    where a squashed allocation can start it as a fork (``python -m snakemake ...``)."""
    if squashed:
        try:
            argv = shlex.split(text)
        except ValueError:
            argv = []
        if argv[1:3] == ["-m", "snakemake"] and not _SHELL & set(argv):
            return tuple(argv)
    return ("/bin/sh", "-c", text)


def _snakemake_image() -> str:
    # The job runs this same Snakemake inside the container.
    try:
        return f"snakemake/snakemake:v{metadata.version('snakemake')}"
    except metadata.PackageNotFoundError:
        return "snakemake/snakemake:latest"


def _describe(prepared: Prepared) -> str:
    request = prepared.request
    parts = [f"cpus={request.cpus:g}" if request.cpus else ""]
    if request.memory:
        parts.append(f"memory={format_bytes(request.memory)}")
    if request.time:
        parts.append(f"time={format_seconds(request.time)}")
    if request.queue:
        parts.append(f"queue={request.queue}")
    return " ".join(p for p in parts if p)


class Executor(RemoteExecutor):
    """``snakemake --executor seqera``."""

    def __post_init__(self) -> None:
        settings = self.workflow.executor_settings or ExecutorSettings()
        try:
            self._setup(settings)
        except SeqeraError as exc:
            raise WorkflowError(f"seqera executor: {exc}") from None

    def _setup(self, settings: ExecutorSettings) -> None:
        config = _config(settings)
        self._run_id = str(uuid.uuid4())
        path = config.get("platform")
        self._platform = platforms.load(path) if path else None
        self._backend_name = str(config.get("backend"))
        if self._platform is not None and config.sources["backend"] == "default":
            self._backend_name = self._platform.scheduler
        self._resolvers: list[Resolver] = configured(config)
        location = config.get("history")
        # sized from what this rule used before; every finished job adds to it
        self._history = open_history(os.path.expanduser(location)) if location else None
        if self._history is not None:
            self._resolvers.append(PredictiveResolver(self._history))
        metadata = {
            "engine": "snakemake",
            "run-id": self._run_id,
            "user": getpass.getuser(),
            "project": Path(self.workflow.workdir_init).name,
        }
        self._run_labels = run_labels(
            "snakemake", metadata, config.get("labels"), auto=config.get("auto_labels")
        )
        self._settings = settings
        jobdir = settings.jobdir or Path(self.workflow.workdir_init) / ".snakemake" / "seqera"
        self._jobdir = Path(jobdir).absolute()
        self._backend = self._open(self._backend_name, settings, config)
        self._squashed = isinstance(self._backend, SquashBackend)
        self._forks = self._squashed or self._backend_name == "local"  # jobs as argv, to fork
        self._image = settings.image or _snakemake_image()
        if self._backend_name == "local":
            # A local poll is a look at this process's own table: no need to wait long.
            every = self.workflow.remote_execution_settings.seconds_between_status_checks
            self._next_seconds_between_status_checks = min(every, 1)
        if self._backend_name == "ecs" and (
            SharedFSUsage.INPUT_OUTPUT in self.workflow.storage_settings.shared_fs_usage
        ):
            raise WorkflowError(
                "seqera executor: backend ecs has no shared filesystem; run with "
                "--default-storage-provider (e.g. s3) and --shared-fs-usage none"
            )

    def _open(self, name: str, settings: ExecutorSettings, config: Config) -> Backend:
        policy = squash_policy(config, self._platform)  # with --seqera-squash* over it
        if name == "local":
            return open_backend(
                name,
                cpus=settings.local_cores,
                workdir=self._jobdir,
                squash=policy,
                preload=PRELOAD,
            )
        if name == "ecs":
            return open_backend(name, squash=policy, **config.section("ecs"))
        # In a squashed allocation every job is `python -m snakemake ...`: the launcher
        # loads Snakemake and its plugins once and starts each job as a fork of itself.
        return open_backend(name, work_dir=self._jobdir, squash=policy, preload=PRELOAD)

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
        try:
            handles = self._backend.submit([spec for _, spec in ready])
        except SubmitError as exc:
            # Jobs before the failure were submitted: keep them, fail the rest.
            handles = list(exc.submitted)
            failed, *unsent = ready[len(handles) :]
            self.report_job_error(SubmittedJobInfo(failed[0]), msg=f"submission failed: {exc}. ")
            for job, _ in unsent:
                why = f"not submitted: the submission before it in the same batch failed ({exc}). "
                self.report_job_error(SubmittedJobInfo(job), msg=why)
        except (SeqeraError, OSError, ValueError) as exc:
            handles = []
            for job, _ in ready:
                self.report_job_error(SubmittedJobInfo(job), msg=f"submission failed: {exc}. ")
        for (job, spec), handle in zip(ready, handles, strict=False):
            aux = {"handle": handle, "request": spec.request}
            self.report_job_submission(
                SubmittedJobInfo(job, external_jobid=handle.native_id, aux=aux)
            )

    def _spec(self, job: JobExecutorInterface) -> JobSpec | None:
        try:
            request, warnings = job_request(
                job, queue=self._settings.queue, account=self._settings.account
            )
            prepared = prepare(request, platform=self._platform, resolvers=self._resolvers,
                               run_labels=self._run_labels)  # fmt: skip
        except SeqeraError as exc:
            self.report_job_error(SubmittedJobInfo(job), msg=f"invalid resources: {exc}. ")
            return None
        for warning in warnings:
            self.logger.warning(f"seqera: rule {request.process}, job {job.jobid}: {warning}")
        if not prepared.ok:
            assert prepared.report is not None
            reason = "; ".join(prepared.report.errors + prepared.report.suggestions)
            self.report_job_error(
                SubmittedJobInfo(job), msg=f"not submitted, no queue can run it: {reason}. "
            )
            return None
        self.logger.debug(f"seqera: job {job.jobid} {job.name}: {_describe(prepared)}")
        name = f"{job.name}-{job.jobid}" if not job.is_group() else f"group-{job.jobid}"
        logdir = self._jobdir / "logs" / name
        logdir.mkdir(parents=True, exist_ok=True)
        log = logdir / f"{self._run_id[:8]}.log"
        shared = self._backend_name != "ecs"
        # One log for both streams, as the Slurm plugin keeps it; PBS copies each stream
        # back on its own, so there the errors get their own file.
        apart = self._backend_name in ("pbs", "torque")
        request = prepared.request
        if request.memory is not None and request.memory < RUNNER_MEMORY:
            # a resolver sized the rule's command alone; the job also runs Snakemake
            request = attrs.evolve(request, memory=RUNNER_MEMORY)
        if not shared:
            request = attrs.evolve(request, container=request.container or self._image)
        return JobSpec(
            name=f"smk-{name}",
            command=_command(self.format_job_exec(job), squashed=self._forks),
            request=request,
            workdir=str(Path(self.workflow.workdir_init).absolute()) if shared else None,
            env=self.envvars(),
            labels=prepared.labels,
            stdout=str(log) if shared else None,
            stderr=(str(log.with_suffix(".err")) if apart else str(log)) if shared else None,
        )

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
                statuses = self._backend.poll(handles)
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
            else:
                self.report_job_error(info, msg=_failure(status), aux_logs=self._logs(status))

    def _record(self, ended: list[tuple[SubmittedJobInfo, JobStatus]]) -> None:
        if self._history is None or not ended:
            return
        records = [
            finished_record(info.aux["request"], status, run_id=self._run_id, engine="snakemake")
            for info, status in ended
            if status.state is not JobState.CANCELLED
        ]
        try:
            self._history.record(records)
        except (SeqeraError, OSError) as exc:  # the history informs; it never fails a job
            self.logger.warning(f"seqera: could not record finished jobs in the history: {exc}")

    def _logs(self, status: JobStatus) -> list[str]:
        handle = status.handle
        paths = list(dict.fromkeys(p for p in (handle.stdout, handle.stderr) if p))
        if paths:
            return paths
        # No shared filesystem (ECS): keep a local copy of what the backend can fetch.
        try:
            text = self._backend.logs(handle)
        except SeqeraError as exc:
            text = f"(the job's log could not be fetched: {exc})\n"
        path = self._jobdir / "logs" / f"{handle.name}.{handle.native_id.rsplit('/', 1)[-1]}.log"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return [str(path)]

    async def sleep(self) -> None:
        """Until the next status check, cut short by a job's end where the backend says so."""
        # The status thread starts before __post_init__ opens the backend.
        wait = getattr(getattr(self, "_backend", None), "wait", None)  # LocalBackend.wait
        handles = [info.aux["handle"] for info in list(self.active_jobs) if info.aux]
        if not callable(wait) or not handles:
            return await super().sleep()
        await asyncio.to_thread(wait, handles, self.next_seconds_between_status_checks)

    def cancel_jobs(self, active_jobs: list[SubmittedJobInfo]) -> None:
        """Cancel every active job with one backend call."""
        handles = [info.aux["handle"] for info in active_jobs if info.aux]
        if handles:
            self._backend.cancel(handles)

    def shutdown(self) -> None:
        super().shutdown()
        close_all(self._resolvers)
        if self._history is not None:
            self._history.close()
        close = getattr(self._backend, "close", None)
        if callable(close):
            close()


def _failure(status: JobStatus) -> str:
    handle = status.handle
    parts = [f"{handle.backend} job {handle.native_id} {status.state.value}"]
    if status.exit_code is not None:
        # A job's exit code is its Snakemake's: 1 when the rule's command failed.
        parts.append(f"exit code {status.exit_code}")
    if status.out_of_memory:
        parts.append("out of memory")
    if status.time_limit:
        parts.append("time limit reached")
    if status.reason and f"code {status.exit_code}" not in status.reason:
        parts.append(status.reason)
    return ", ".join(parts) + ". "  # Snakemake appends its own hint right after
