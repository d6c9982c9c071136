"""AWS ECS Managed Instances: one task definition per shape, RunTask per job, batched polls.

Life of a job: the first submit checks the cluster (exists, ACTIVE, has a managed-instances
capacity provider) and finds the network (default VPC when none is configured). Each job's
shape (image, cpu, memory, GPUs, storage) maps to one task definition, found by the hash
tag on an existing revision of the family before a new one is registered; the job itself
is one RunTask with its command, environment and labels. ``poll`` describes every active
task with one DescribeTasks per 100, stops tasks whose time limit has passed (ECS has no
walltime) and starts again a task its capacity was taken from (spot interruption), up to
``max_spot_attempts`` starts, under the same handle (``resubmissions`` on its status).
``logs`` reads the awslogs stream of the task's container. A task that ran reports its
wall time (startedAt to stoppedAt) and, under the usage wrapper, its container's peak
memory, read from the logs of every task that stopped in the same poll with one
FilterLogEvents per 100; until that line arrives (at most ``usage_wait`` seconds) the task
shows as running (all three shared with AWS Batch: ``backends.awslogs``).

Credentials come only from boto3's standard chain (environment, profile, instance role);
``AWS_ENDPOINT_URL`` points every client at an emulator. Throttling and transient errors
are retried by botocore's ``standard`` retry mode: exponential backoff with jitter.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import attrs
import boto3
import botocore.config
import botocore.exceptions

from ...errors import ResourceError, SeqeraError
from ..awslogs import LoggedJob, UsageLog, call, chunks, counted, error_code, output
from ..base import Backend, JobHandle, JobSpec, JobState, JobStatus
from ..batch import SubmitError, job_labels
from ._cluster import capacity
from ._definitions import TaskDefinitions
from ._network import network
from ._payloads import (
    EcsSettings,
    log_stream,
    run_task_request,
    shape_of,
    submission_key,
    task_definition_request,
)
from ._status import Seen, seen

__all__ = ["EcsBackend", "EcsError", "EcsSettings"]

_LOG = logging.getLogger("seqera_core.backends.ecs._backend")
_DESCRIBE_MAX = 100  # DescribeTasks takes at most 100 tasks
_STOPPED_BY_US = "stopped by seqera"


class EcsError(SeqeraError):
    """An AWS call failed for good (after botocore's retries), or ECS refused a task."""


# Refusals that say "not now" rather than "no": throttling and the service's own errors.
_TRANSIENT_CODES = frozenset(
    {"ThrottlingException", "RequestLimitExceeded", "ServerException", "ServiceUnavailable"}
)


def _transient(exc: EcsError) -> bool:
    cause = exc.__cause__
    if isinstance(cause, botocore.exceptions.ClientError):
        return error_code(cause) in _TRANSIENT_CODES
    return isinstance(cause, botocore.exceptions.BotoCoreError)  # no answer: the network


@attrs.define(eq=False)
class _Task(LoggedJob):
    # key: the first start's ARN. A task's current ARN changes when a spot interruption
    # restarts it.
    arn: str  # the current start's ARN
    spec: JobSpec | None  # None for a handle this backend did not submit
    body: dict[str, Any] | None
    attempts: int = 1
    running_since: float | None = None
    stopping: str | None = None  # "time" or "cancel" once we asked ECS to stop it

    @property
    def name(self) -> str:
        return self.arn


class EcsBackend(Backend):
    """Runs jobs as ECS tasks on a cluster's managed-instances capacity provider.

    Args:
        settings: cluster, roles, network and limits (:class:`EcsSettings`).
        session: a boto3 session; by default a new one (boto3's credential chain).
        max_attempts: attempts per AWS call, the first included, for throttling and
            transient errors (botocore ``standard`` retry mode).
    """

    name = "ecs"

    def __init__(
        self,
        settings: EcsSettings,
        *,
        session: boto3.session.Session | None = None,
        max_attempts: int = 8,
    ) -> None:
        super().__init__()
        self.settings = settings
        session = session or boto3.session.Session(region_name=settings.region)
        region = settings.region or session.region_name
        if not region:
            raise ResourceError("ecs.region", None, "an AWS region (ecs.region or AWS_REGION)")
        self.region: str = region
        config = botocore.config.Config(
            region_name=region, retries={"mode": "standard", "total_max_attempts": max_attempts}
        )
        self.ecs: Any = session.client("ecs", config=config)
        self.ec2: Any = session.client("ec2", config=config)
        self.cloudwatch_logs: Any = session.client("logs", config=config)
        counted(self.calls, self.ecs, self.ec2, self.cloudwatch_logs)
        self.capacity_provider: str | None = None
        self.storage_gib: int | None = None
        self.subnets: tuple[str, ...] = settings.subnets
        self.security_groups: tuple[str, ...] = settings.security_groups
        self._ready = False
        self._definitions = TaskDefinitions(self.ecs, self._call)
        self._tasks: dict[str, _Task] = {}  # first ARN (the handle's) -> task
        self._usage = UsageLog(
            self.cloudwatch_logs, settings.logs_group, settings.usage_wait, "ECS task",
            "stopped", _LOG,
        )  # fmt: skip

    def _call(self, method: Any, **params: Any) -> Any:
        return call(EcsError, method, **params)

    # -- start-up ------------------------------------------------------------------------

    def check(self) -> None:
        """Check the cluster and capacity provider and find the network; once per backend."""
        if self._ready:
            return
        self.capacity_provider, self.storage_gib = capacity(
            self._call, self.ecs, self.settings.cluster, self.settings.capacity_provider,
            self.region,
        )  # fmt: skip
        if not self.subnets or not self.security_groups:
            self.subnets, self.security_groups = network(
                self._call, self.ec2, self.subnets, self.security_groups, self.region
            )
            _LOG.info("ECS network: subnets %s, groups %s", self.subnets, self.security_groups)
        self._ensure_log_group()
        self._ready = True

    def _ensure_log_group(self) -> None:
        # Without the group awslogs cannot start the container; creating it here needs no
        # logs:CreateLogGroup in the execution role.
        try:
            self.cloudwatch_logs.create_log_group(logGroupName=self.settings.logs_group)
        except botocore.exceptions.ClientError as exc:
            if error_code(exc) != "ResourceAlreadyExistsException":
                _LOG.warning("could not create log group %s: %s", self.settings.logs_group, exc)

    # -- the contract --------------------------------------------------------------------

    def submit(self, jobs: Sequence[JobSpec]) -> list[JobHandle]:
        """Register what is missing and start one task per job; nothing starts on bad input."""
        self.check()
        assert self.capacity_provider is not None
        shapes = [shape_of(spec.request, self.settings) for spec in jobs]
        for shape in shapes:
            if shape.storage and self.storage_gib and shape.storage > self.storage_gib:
                raise ResourceError(
                    "disk",
                    f"{shape.storage} GiB",
                    f"at most {self.storage_gib} GiB, the data volume of capacity provider "
                    f"{self.capacity_provider} (instanceLaunchTemplate.storageConfiguration)",
                )
        bodies = [self._body(spec, "arn:pending") for spec in jobs]  # validates every job
        handles: list[JobHandle] = []
        for spec, shape, body in zip(jobs, shapes, bodies, strict=True):
            body["taskDefinition"] = self._definitions.arn(
                *task_definition_request(shape, self.settings, self.region)
            )
            try:
                arn = self._run(body)
            except EcsError as exc:
                # The answer may be what was lost: ask for the key before calling it failed.
                found = self._started(body["startedBy"])
                if found is None:
                    raise SubmitError(str(exc), None, handles) from exc
                arn = found
            self._tasks[arn] = _Task(arn, arn, spec, body)
            handles.append(JobHandle(self.name, arn, spec.name))
        return handles

    def _body(self, spec: JobSpec, definition: str) -> dict[str, Any]:
        assert self.capacity_provider is not None
        return run_task_request(
            settings=self.settings,
            definition=definition,
            capacity_provider=self.capacity_provider,
            subnets=self.subnets,
            security_groups=self.security_groups,
            command=spec.command,
            env=spec.env,
            labels=job_labels(spec),
            machine_type=spec.request.machine_type,
            key=submission_key(caller=spec.key),
        )

    def find(self, keys: Sequence[str]) -> dict[str, JobHandle]:
        """The tasks started for these caller keys (``JobSpec.key``), by key: ListTasks by
        ``startedBy`` (the key's digest, see ``_ecs_payloads.submission_key``), running
        then stopped, at most two calls per key. A found task is followed like any other;
        after a spot interruption it is reported, not started again (its body stayed
        with the process that submitted it). ECS forgets a stopped task after about an hour.

        Raises:
            UsageError: no such cluster (as a submission says it, :meth:`check`).
            EcsError: ListTasks failed (after botocore's retries): nothing can be concluded.
        """
        found: dict[str, JobHandle] = {}
        if keys:
            self.check()  # a cluster that does not exist is the user's to fix, not a failure
        for key in dict.fromkeys(keys):
            arn = self._listed(submission_key(caller=key))
            if arn is not None:
                self._record(JobHandle(self.name, arn))
                found[key] = JobHandle(self.name, arn)
        return found

    def _listed(self, key: str) -> str | None:
        """The task a submission key started, if any (ListTasks by ``startedBy``)."""
        for status in ("RUNNING", "STOPPED"):
            try:
                found = self.ecs.list_tasks(
                    cluster=self.settings.cluster, startedBy=key, desiredStatus=status
                )
            except (botocore.exceptions.ClientError, botocore.exceptions.BotoCoreError) as exc:
                raise EcsError(f"ListTasks by startedBy {key} failed: {exc}") from exc
            arns = found.get("taskArns") or []
            if arns:
                return str(arns[0])
        return None

    def _started(self, key: str) -> str | None:
        """:meth:`_listed`, None when ECS cannot tell: the caller reports the failure."""
        try:
            return self._listed(key)
        except EcsError:
            return None

    def _run(self, body: dict[str, Any]) -> str:
        started = self._call(self.ecs.run_task, **body)
        failures = started.get("failures") or []
        tasks = started.get("tasks") or []
        if failures or not tasks:
            why = "; ".join(f"{f.get('reason')} {f.get('detail') or ''}".strip() for f in failures)
            raise EcsError(f"RunTask started no task: {why or 'no reason given'}")
        return str(tasks[0]["taskArn"])

    def _record(self, handle: JobHandle) -> _Task:
        task = self._tasks.get(handle.native_id)
        if task is None:  # a task another process submitted: followed, never restarted
            key = handle.native_id
            task = self._tasks[key] = _Task(key, key, None, None)
        return task

    def poll(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        """Every handle's status: one DescribeTasks per 100 active tasks."""
        records = [self._record(handle) for handle in handles]
        active = list({r.key: r for r in records if r.final is None and r.ended is None}.values())
        described: dict[str, dict[str, Any]] = {}
        for chunk in chunks([r.arn for r in active], _DESCRIBE_MAX):
            found = self._call(self.ecs.describe_tasks, cluster=self.settings.cluster, tasks=chunk)
            described.update({t["taskArn"]: t for t in found.get("tasks") or []})
        now = time.time()
        statuses: dict[str, JobStatus] = {}
        for record in active:
            handle = JobHandle(self.name, record.key)
            task = described.get(record.arn)
            if task is None:  # ECS forgets a stopped task after about an hour
                reason = f"DescribeTasks does not know {record.arn}"
                statuses[record.key] = JobStatus(handle, JobState.UNKNOWN, reason=reason)
                continue
            statuses[record.key] = self._settle(handle, record, seen(task), now)
        ended = {log_stream(self.settings, r.arn): r for r in records if r.ended is not None}
        statuses.update(self._usage.settle(ended, now))
        # A spot restart is the backend's own: the engine sees one attempt, resubmitted.
        return [
            attrs.evolve(
                record.final or statuses[record.key],
                handle=handle,
                resubmissions=record.attempts - 1,
            )
            for handle, record in zip(handles, records, strict=True)
        ]

    def _settle(self, handle: JobHandle, record: _Task, view: Seen, now: float) -> JobStatus:
        limit = record.spec.request.time if record.spec else None
        if view.state is JobState.RUNNING:
            record.running_since = record.running_since or view.started_at or now
            if limit and record.stopping is None and now - record.running_since >= limit:
                self._stop(record, "time", f"{_STOPPED_BY_US}: time limit of {limit} s exceeded")
            return JobStatus(handle, JobState.RUNNING, reason=view.reason)
        if not view.state.finished:
            return JobStatus(handle, view.state, reason=view.reason)
        if view.spot and record.stopping is None:
            if record.body is not None and record.attempts < self.settings.max_spot_attempts:
                return self._restart(handle, record, view)
            view = attrs.evolve(
                view, reason=f"gave up after {record.attempts} spot interruptions: {view.reason}"
            )
        ended = view.stopped_at or now
        wall = max(0.0, ended - record.running_since) if record.running_since else None
        if record.stopping == "time":
            reason = f"time limit of {limit} s exceeded"
            final = JobStatus(handle, JobState.FAILED, view.exit_code, reason, time_limit=True)
        elif record.stopping == "cancel":
            final = JobStatus(handle, JobState.CANCELLED, view.exit_code, "cancelled")
        else:
            final = JobStatus(
                handle, view.state, view.exit_code, view.reason, out_of_memory=view.out_of_memory
            )
        final = attrs.evolve(final, wall_seconds=wall)
        logged = bool(self.settings.report_usage and record.running_since)
        return self._usage.end(record, final, now, logged=logged)

    def _restart(self, handle: JobHandle, record: _Task, view: Seen) -> JobStatus:
        assert record.body is not None
        limit = self.settings.max_spot_attempts
        _LOG.warning(
            "ECS task %s was interrupted (%s); starting it again, attempt %d of %d",
            record.arn,
            view.reason,
            record.attempts + 1,
            limit,
        )
        # A restart is a new task: it needs its own token, or ECS would answer with the old.
        key = submission_key(record.attempts, base=str(record.body.get("clientToken", "")))
        body = {**record.body, "clientToken": key, "startedBy": key}
        try:
            record.arn = self._run(body)
        except EcsError as exc:
            found = self._started(key)
            if found is None and _transient(exc):
                # Throttled past botocore's retries: the next poll sees the same stopped
                # task and tries again under the same key (clientToken: at most one starts).
                why = f"restarting after a spot interruption: {exc}"
                return JobStatus(handle, JobState.PENDING, reason=why)
            if found is None:
                record.final = JobStatus(handle, JobState.FAILED, None, f"{view.reason}; {exc}")
                return record.final
            record.arn = found
        record.attempts += 1
        record.running_since = None
        reason = f"restarted after a spot interruption (attempt {record.attempts} of {limit})"
        return JobStatus(handle, JobState.PENDING, reason=reason)

    def _stop(self, record: _Task, why: str, reason: str) -> None:
        record.stopping = why
        try:
            self.ecs.stop_task(cluster=self.settings.cluster, task=record.arn, reason=reason)
        except botocore.exceptions.ClientError as exc:
            _LOG.warning("StopTask %s failed: %s", record.arn, exc)  # it may have ended already

    def cancel(self, handles: Sequence[JobHandle]) -> None:
        """StopTask for every job still running (ECS stops tasks one by one)."""
        for handle in handles:
            record = self._record(handle)
            if record.final is None and record.stopping is None:
                self._stop(record, "cancel", f"{_STOPPED_BY_US}: cancelled")

    def logs(self, handle: JobHandle) -> str:
        """The container's output so far, from its CloudWatch Logs stream."""
        stream = log_stream(self.settings, self._record(handle).arn)
        try:
            return output(self.cloudwatch_logs, self.settings.logs_group, stream)
        except botocore.exceptions.ClientError as exc:
            raise EcsError(f"GetLogEvents failed: {exc}") from exc
