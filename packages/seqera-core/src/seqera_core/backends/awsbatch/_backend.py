"""AWS Batch: each job a SubmitJob on a job queue, arrays natively, batched DescribeJobs polls.

Life of a job: the first job sent to a queue reads the queue's limits (``_queues``); a job
no instance of it can hold is refused before anything is sent (it would wait RUNNABLE for
ever). Each shape (image, vCPUs, memory, GPUs) maps to one job definition, found by its
digest-bearing name before one is registered (``_payloads``). The job is one SubmitJob
with its command, environment, labels as tags, ``timeout.attemptDurationSeconds`` and a
``retryStrategy`` that lets Batch itself retry an attempt whose Spot host was reclaimed.
With the squash policy's arrays on, jobs of one shape, queue, environment and labels go
out as one array job (``arrayProperties``) whose element N runs job N's command; a job
carrying a caller key always goes out alone, so ``find`` can name it by its job name.

``poll`` describes every active job with one DescribeJobs per 100; a job that ran reports
its wall time and, under the usage wrapper ECS uses too (``backends.awslogs``), its
container's peak memory and CPU time, read from the CloudWatch Logs stream DescribeJobs
names. ``cancel`` is one TerminateJob per job (it also cancels jobs not yet started).

SubmitJob has no client token, so its client never retries by itself: a throttled call
was refused and is sent again; any other failure whose outcome is unknown is followed by
a ListJobs for the job's key (its name's prefix) before it is called failed. Credentials
come only from boto3's standard chain; ``AWS_ENDPOINT_URL`` points every client at an
emulator.
"""

from __future__ import annotations

import logging
import shlex
import time
from collections.abc import Hashable, Sequence
from typing import Any

import attrs
import boto3
import botocore.config
import botocore.exceptions

from ...errors import ResourceError, SeqeraError
from ...squash import SquashPolicy, array_key
from ..awslogs import LoggedJob, UsageLog, call, chunks, counted, error_code, output
from ..base import Backend, JobHandle, JobSpec, JobState, JobStatus
from ..batch import SubmitError, job_labels
from ._payloads import (
    ARGV_PREFIX,
    SUBMISSION_TAG,
    BatchSettings,
    array_command,
    definition_request,
    key_prefix,
    shape_of,
    submission_key,
    submit_request,
)
from ._queues import QueueLimits, describe_queues, queue_limits
from ._status import CANCEL_REASON, seen

__all__ = ["AwsBatchBackend", "AwsBatchError", "BatchSettings"]

_LOG = logging.getLogger("seqera_core.backends.awsbatch")
_DESCRIBE_MAX = 100  # DescribeJobs takes at most 100 job ids
_ARRAY_MAX = 10_000  # arrayProperties.size: 2 to 10,000
_ARRAY_ARGV_BYTES = 20_000  # elements' commands per array: SubmitJob bodies stay small
_REFUSED_FOR_NOW = frozenset({"ThrottlingException", "TooManyRequestsException"})


class AwsBatchError(SeqeraError):
    """An AWS call failed for good (after botocore's retries), or Batch refused a job."""


@attrs.define(eq=False)
class _Job(LoggedJob):
    log_stream: str | None = None  # what DescribeJobs names once the container has started


class AwsBatchBackend(Backend):
    """Runs jobs on AWS Batch job queues.

    Args:
        settings: queue, roles, platform and limits (:class:`BatchSettings`).
        squash: the squash policy; its ``array`` mode sends jobs of one shape as arrays.
        session: a boto3 session; by default a new one (boto3's credential chain).
        max_attempts: attempts per AWS call, the first included, for throttling and
            transient errors (botocore ``standard`` retry mode; SubmitJob's own loop).
    """

    name = "batch"

    def __init__(
        self,
        settings: BatchSettings,
        *,
        squash: SquashPolicy | None = None,
        session: boto3.session.Session | None = None,
        max_attempts: int = 8,
    ) -> None:
        super().__init__()
        self.settings = settings
        self.squash = squash or SquashPolicy()
        session = session or boto3.session.Session(region_name=settings.region)
        region = settings.region or session.region_name
        if not region:
            raise ResourceError("batch.region", None, "an AWS region (batch.region or AWS_REGION)")
        self.region: str = region
        self.max_attempts = max_attempts
        retries = {"mode": "standard", "total_max_attempts": max_attempts}
        config = botocore.config.Config(region_name=region, retries=retries)
        once = botocore.config.Config(region_name=region, retries={"total_max_attempts": 1})
        self.batch: Any = session.client("batch", config=config)
        self.submitter: Any = session.client("batch", config=once)  # SubmitJob: never resent
        self.cloudwatch_logs: Any = session.client("logs", config=config)
        counted(self.calls, self.batch, self.submitter, self.cloudwatch_logs)
        self._session, self._config = session, config
        self._ec2: Any = None
        self._limits: dict[str, QueueLimits] = {}
        self._definitions: dict[str, str] = {}  # definition name -> ARN
        self._jobs: dict[str, _Job] = {}
        self._usage = UsageLog(
            self.cloudwatch_logs, settings.logs_group, settings.usage_wait, "AWS Batch job",
            "ended", _LOG,
        )  # fmt: skip

    def _call(self, method: Any, **params: Any) -> Any:
        return call(AwsBatchError, method, **params)

    # -- before sending ------------------------------------------------------------------

    def limits(self, queue: str) -> QueueLimits:
        """The queue's limits, read once per backend (the queue must be ENABLED, VALID)."""
        if queue not in self._limits:
            self._limits[queue] = queue_limits(self._call, self.batch, self.ec2, queue)
        return self._limits[queue]

    def queues(self) -> list[dict[str, Any]]:
        """Every job queue of the account (DescribeJobQueues, paginated)."""
        return describe_queues(self._call, self.batch, None)

    @property
    def ec2(self) -> Any:
        """An EC2 client, made on first use: only instance types' sizes are read from it
        (EC2's service model takes a while to load)."""
        if self._ec2 is None:
            self._ec2 = self._session.client("ec2", config=self._config)
            counted(self.calls, self._ec2)
        return self._ec2

    def _definition(self, body: dict[str, Any]) -> str:
        name = str(body["jobDefinitionName"])
        if name not in self._definitions:
            found = (
                self._call(
                    self.batch.describe_job_definitions, jobDefinitionName=name, status="ACTIVE"
                ).get("jobDefinitions")
                or []
            )
            if found:
                newest = max(found, key=lambda d: int(d.get("revision", 0)))
                self._definitions[name] = str(newest["jobDefinitionArn"])
            else:
                made = self._call(self.batch.register_job_definition, **body)
                self._definitions[name] = str(made["jobDefinitionArn"])
        return self._definitions[name]

    def _groups(self, jobs: Sequence[JobSpec]) -> list[list[int]]:
        """Which jobs go out together as one array: lists of indices."""
        if not self.squash.arrays:
            return [[n] for n in range(len(jobs))]
        groups: dict[Hashable, list[list[int]]] = {}
        for n, spec in enumerate(jobs):
            if spec.key is not None or spec.request.multi_task:
                groups[("alone", n)] = [[n]]
                continue
            labels = job_labels(spec)
            key = (array_key(spec.request, labels, self.squash), self._queue(spec),
                   tuple(sorted(spec.env.items())), tuple(sorted(labels.items())))  # fmt: skip
            parts = groups.setdefault(key, [[]])
            size = sum(len(shlex.join(jobs[m].command)) for m in parts[-1])
            if len(parts[-1]) >= min(self.squash.max_jobs, _ARRAY_MAX) or (
                parts[-1] and size + len(shlex.join(spec.command)) > _ARRAY_ARGV_BYTES
            ):
                parts.append([])
            parts[-1].append(n)
        return sorted((p for parts in groups.values() for p in parts), key=lambda p: p[0])

    def _queue(self, spec: JobSpec) -> str:
        return spec.request.queue or self.settings.queue

    # -- the contract --------------------------------------------------------------------

    def submit(self, jobs: Sequence[JobSpec]) -> list[JobHandle]:
        """Register what is missing and submit every job (arrays where allowed); nothing
        is sent when a job is invalid or larger than its queue's largest instance."""
        shapes = [shape_of(spec.request, self.settings) for spec in jobs]
        for spec, shape in zip(jobs, shapes, strict=True):
            self.limits(self._queue(spec)).check(shape.cpus, shape.memory, shape.gpus)
        bodies = [self._body(jobs, shapes, group) for group in self._groups(jobs)]
        handles: dict[int, JobHandle] = {}
        for group, definition, body in bodies:
            try:
                body["jobDefinition"] = self._definition(definition)
                job_id = self._send(body)
            except AwsBatchError as exc:
                done = sorted(handles)
                raise SubmitError(
                    str(exc), None, [handles[n] for n in done], positions=done,
                    errors={n: str(exc) for n in group},
                ) from exc  # fmt: skip
            for index, n in enumerate(group):
                native = job_id if len(group) == 1 else f"{job_id}:{index}"
                self._jobs[native] = _Job(native)
                handles[n] = JobHandle(self.name, native, jobs[n].name)
        return [handles[n] for n in range(len(jobs))]

    def _body(
        self, jobs: Sequence[JobSpec], shapes: Sequence[Any], group: list[int]
    ) -> tuple[list[int], dict[str, Any], dict[str, Any]]:
        first = jobs[group[0]]
        command: Sequence[str] = first.command
        env = dict(first.env)
        if len(group) > 1:  # element N runs job N's command
            command = array_command()
            env.update({f"{ARGV_PREFIX}{i}": shlex.join(jobs[n].command)
                        for i, n in enumerate(group)})  # fmt: skip
        body = submit_request(
            settings=self.settings,
            definition="pending",
            queue=self._queue(first),
            name=first.name,
            key=submission_key(caller=first.key),
            command=command,
            env=env,
            labels=job_labels(first),
            shape=shapes[group[0]],
            time=first.request.time,
            array_size=len(group) if len(group) > 1 else None,
        )
        return group, definition_request(shapes[group[0]], self.settings), body

    def _send(self, body: dict[str, Any]) -> str:
        """SubmitJob once, or again only when refused for now; after an unknown outcome,
        the job listed under its key if Batch has it."""
        key = str(body["tags"][SUBMISSION_TAG])
        for attempt in range(self.max_attempts):
            try:
                return str(self.submitter.submit_job(**body)["jobId"])
            except botocore.exceptions.ClientError as exc:
                code, status = error_code(exc), exc.response.get("ResponseMetadata", {})
                if code in _REFUSED_FOR_NOW and attempt + 1 < self.max_attempts:
                    time.sleep(min(20.0, 0.5 * 2**attempt))  # refused: nothing was created
                    continue
                if int(status.get("HTTPStatusCode") or 500) < 500:
                    raise AwsBatchError(f"SubmitJob refused: {exc}") from exc
                lost: Exception = exc
            except botocore.exceptions.BotoCoreError as exc:
                lost = exc
            found = self._listed(key, str(body["jobQueue"]))  # the answer may be what was lost
            if found is not None:
                return found
            raise AwsBatchError(f"SubmitJob failed: {lost}") from lost
        raise AwsBatchError(f"SubmitJob throttled {self.max_attempts} times")

    def _listed(self, key: str, queue: str) -> str | None:
        """The id of the job a submission key named in ``queue`` (ListJobs by name)."""
        params: dict[str, Any] = {
            "jobQueue": queue,
            "filters": [{"name": "JOB_NAME", "values": [key_prefix(key)]}],
        }
        while True:  # with filters, ListJobs lists jobs of every status
            page = self._call(self.batch.list_jobs, **params)
            for job in page.get("jobSummaryList") or []:
                if str(job.get("jobName", "")).startswith(f"{key}-"):
                    return str(job["jobId"])
            if not page.get("nextToken"):
                return None
            params["nextToken"] = page["nextToken"]

    def find(self, keys: Sequence[str]) -> dict[str, JobHandle]:
        """The jobs submitted for these caller keys (``JobSpec.key``), by key: one ListJobs
        by name prefix per key and job queue (every queue of the account: a job may have
        gone to a platform's queue). Batch lists a finished job for about a day.

        Raises:
            AwsBatchError: a call failed (after botocore's retries): nothing can be concluded.
        """
        queues = [str(q["jobQueueName"]) for q in self.queues()]
        found: dict[str, JobHandle] = {}
        for key in dict.fromkeys(keys):
            for queue in queues:
                job_id = self._listed(submission_key(caller=key), queue)
                if job_id is not None:
                    self._jobs.setdefault(job_id, _Job(job_id))
                    found[key] = JobHandle(self.name, job_id)
                    break
        return found

    def poll(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        """Every handle's status: one DescribeJobs per 100 active jobs."""
        records = [self._jobs.setdefault(h.native_id, _Job(h.native_id)) for h in handles]
        active = list({r.key: r for r in records if r.final is None and r.ended is None})
        described: dict[str, dict[str, Any]] = {}
        for chunk in chunks(active, _DESCRIBE_MAX):
            found = self._call(self.batch.describe_jobs, jobs=list(chunk))
            described.update({str(j["jobId"]): j for j in found.get("jobs") or []})
        now = time.time()
        statuses: dict[str, JobStatus] = {}
        for native in active:
            handle, job = JobHandle(self.name, native), described.get(native)
            if job is None:  # Batch forgets a finished job after about a day
                why = f"DescribeJobs does not know {native}"
                statuses[native] = JobStatus(handle, JobState.UNKNOWN, reason=why)
                continue
            statuses[native] = self._settle(handle, self._jobs[native], job, now)
        ended = {str(r.log_stream): r for r in records if r.ended is not None}
        statuses.update(self._usage.settle(ended, now))
        return [
            attrs.evolve(r.final or statuses[r.key], handle=h)
            for h, r in zip(handles, records, strict=True)
        ]

    def _settle(
        self, handle: JobHandle, record: _Job, job: dict[str, Any], now: float
    ) -> JobStatus:
        view = seen(job)
        record.log_stream = view.log_stream or record.log_stream
        if not view.state.finished:
            return JobStatus(handle, view.state, reason=view.reason)
        wall = None
        if view.started_at is not None:
            wall = max(0.0, (view.stopped_at or now) - view.started_at)
        final = JobStatus(
            handle, view.state, view.exit_code, view.reason,
            out_of_memory=view.cause == "out_of_memory", time_limit=view.cause == "time_limit",
            wall_seconds=wall, cause=view.cause, resubmissions=max(0, view.attempts - 1),
            started_at=view.started_at,
        )  # fmt: skip
        logged = bool(self.settings.report_usage and record.log_stream and view.started_at)
        return self._usage.end(record, final, now, logged=logged)

    def cancel(self, handles: Sequence[JobHandle]) -> None:
        """TerminateJob for every job not yet finished (Batch ends jobs one by one)."""
        for handle in handles:
            record = self._jobs.get(handle.native_id)
            if record is not None and (record.final or record.ended):
                continue
            try:
                self.batch.terminate_job(jobId=handle.native_id, reason=CANCEL_REASON)
            except botocore.exceptions.ClientError as exc:
                _LOG.warning("TerminateJob %s failed: %s", handle.native_id, exc)

    def logs(self, handle: JobHandle) -> str:
        """The container's output so far, from its CloudWatch Logs stream."""
        record = self._jobs.setdefault(handle.native_id, _Job(handle.native_id))
        if record.log_stream is None:
            found = self._call(self.batch.describe_jobs, jobs=[handle.native_id])
            for job in found.get("jobs") or []:
                record.log_stream = seen(job).log_stream
        if record.log_stream is None:
            return ""  # not started: no stream yet
        try:
            return output(self.cloudwatch_logs, self.settings.logs_group, record.log_stream)
        except botocore.exceptions.ClientError as exc:
            raise AwsBatchError(f"GetLogEvents failed: {exc}") from exc
