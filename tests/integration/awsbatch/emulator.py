"""moto[server]'s AWS Batch without Docker (``batch_simple``), and the in-process edits it needs.

moto's full Batch backend runs each job in a Docker container; none runs here. Its
``batch_simple`` backend (moto/batch_simple/models.py), chosen by the server's config
``{"batch": {"use_docker": false}}`` (POST /moto-api/config), accepts everything the real
one does (compute environments, job queues, definitions, SubmitJob with array properties
and tags, ListJobs with the JOB_NAME filter, DescribeJobs of parents and ``id:N``
children, TerminateJob) but runs nothing: SubmitJob marks the job SUCCEEDED on the spot
(FAILED after ``MOTO_SIMPLE_BATCH_FAIL_AFTER`` seconds when that is set). Its gaps,
worked around here so the backend stays written for real AWS:

* No exit code, container reason or log line ever: DescribeJobs' ``container`` holds
  neither ``exitCode`` nor ``reason``, and nothing is written to the job's log stream.
  :meth:`BatchEmulator.hold` keeps new jobs RUNNING (started, one attempt, a log
  stream) until :meth:`BatchEmulator.finish` ends one as Batch would, with an exit code,
  a container reason and a statusReason; the describe shim adds the exit code and reason
  to ``container`` as AWS reports them. Every job that finishes (at once, or by
  ``finish``) gets its log stream written: the command's words, and under the backend's
  usage wrapper the real wrapper script run here with ``echo`` in front of the command,
  so the stream also holds the wrapper's ``seqera-usage`` line (this machine's cgroup).
* ``retryStrategy``, ``propagateTags`` and ``timeout`` are accepted and ignored: no
  attempt is ever retried or timed out by the emulator (a test ends it with the reason
  AWS would give).
* TerminateJob only records its reason; :meth:`finish` (or ``hold`` off) decides the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import urllib.request
from typing import Any

import boto3
from moto import backends
from moto.batch_simple.models import batch_simple_backends

from seqera_core.backends.awsbatch._payloads import ARGV_PREFIX
from seqera_core.backends.awslogs import MARKER
from tests.integration.ecs.emulator import ACCOUNT, REGION, Emulator, put_log

__all__ = ["QUEUE", "BatchEmulator"]

QUEUE = "seqera"
TYPES = ("m5.large", "r5.2xlarge", "g4dn.xlarge")  # the default queue's instance types
_CLIENTS: dict[
    tuple[str, str], Any
] = {}  # one per service for the session: each takes a while to make
SERVICE_ROLE = f"arn:aws:iam::{ACCOUNT}:role/AWSBatchServiceRole"


class BatchEmulator:
    """The moto server of the ECS tests, with Batch in its no-Docker mode."""

    def __init__(self, server: Emulator) -> None:
        self.server = server
        self.url = server.url
        self.env = server.env
        self.held = False

    def reset(self) -> None:
        """Forget every resource, switch Batch to batch_simple and put the shims back."""
        self.server.reset()
        data = json.dumps({"batch": {"use_docker": False}}).encode()
        request = urllib.request.Request(f"{self.url}/moto-api/config", data, method="POST")
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
        self.held = False
        _install(self)

    def client(self, service: str) -> Any:
        """A boto3 client of the emulator, over HTTP like the backend's."""
        if (service, self.url) not in _CLIENTS:
            keys = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
            _CLIENTS[service, self.url] = boto3.client(
                service, endpoint_url=self.url, region_name=REGION, **keys
            )
        return _CLIENTS[service, self.url]

    def create_queue(
        self, name: str = QUEUE, instance_types: tuple[str, ...] = TYPES,
        max_vcpus: int = 64, kind: str = "EC2", state: str = "ENABLED",
    ) -> str:  # fmt: skip
        """A managed compute environment of ``instance_types`` and a job queue on it,
        made through the API as an administrator would."""
        iam, ec2, batch = self.client("iam"), self.client("ec2"), self.client("batch")
        trust = json.dumps({"Version": "2012-10-17", "Statement": []})
        roles = [r["RoleName"] for r in iam.list_roles()["Roles"]]
        if "AWSBatchServiceRole" not in roles:
            iam.create_role(RoleName="AWSBatchServiceRole", AssumeRolePolicyDocument=trust)
            iam.create_instance_profile(InstanceProfileName="ecsInstanceRole")
        subnets = [s["SubnetId"] for s in ec2.describe_subnets()["Subnets"]][:1]
        groups = [g["GroupId"] for g in ec2.describe_security_groups()["SecurityGroups"]][:1]
        resources: dict[str, Any] = {"type": kind, "maxvCpus": max_vcpus, "subnets": subnets,
                                     "securityGroupIds": groups}  # fmt: skip
        if not kind.startswith("FARGATE"):
            profile = f"arn:aws:iam::{ACCOUNT}:instance-profile/ecsInstanceRole"
            resources.update(minvCpus=0, instanceTypes=list(instance_types), instanceRole=profile)
        environment = batch.create_compute_environment(
            computeEnvironmentName=f"{name}-ce", type="MANAGED", state="ENABLED",
            computeResources=resources, serviceRole=SERVICE_ROLE,
        )["computeEnvironmentArn"]  # fmt: skip
        batch.create_job_queue(
            jobQueueName=name, state=state, priority=1,
            computeEnvironmentOrder=[{"order": 1, "computeEnvironment": environment}],
        )  # fmt: skip
        return name

    def hold(self, held: bool = True) -> None:
        """Keep jobs submitted from now on RUNNING until :meth:`finish` ends them."""
        self.held = held

    def started(self) -> list[Any]:
        """moto's records of the jobs submitted, oldest first."""
        return list(self.state()._jobs.values())

    @staticmethod
    def command(job: Any) -> list[str]:
        """The command of a job's container overrides."""
        return list(job.container_overrides["command"])

    def end(self, job: Any, exit_code: int, reason: str | None = None) -> None:
        """:meth:`finish` a held job whose container exited with ``exit_code``."""
        self.finish(job.job_id, exit_code=exit_code, status_reason=reason)

    def job(self, job_id: str) -> Any:
        """moto's record of a job (``id`` or ``id:N`` for an array's element)."""
        return self.state()._jobs[job_id]

    def state(self) -> Any:
        return backends.get_backend("batch")[ACCOUNT][REGION]

    def finish(
        self, job_id: str, *, exit_code: int = 0, status_reason: str | None = None,
        container_reason: str | None = None,
    ) -> None:  # fmt: skip
        """End a held job as Batch would: SUCCEEDED for 0, else FAILED with the reasons."""
        job = self.job(job_id)
        job.exit_code = exit_code
        job.container_reason = container_reason
        if status_reason is not None:
            job.job_stopped_reason = status_reason
        _write_log(self, job)
        job._mark_stopped(success=exit_code == 0)


def _install(emulator: BatchEmulator) -> None:
    simple = batch_simple_backends[ACCOUNT][REGION]
    finished = type(simple)._mark_job_as_finished

    def mark(include_start_attempt: bool, job: Any) -> None:
        if not emulator.held or not include_start_attempt:
            finished(simple, include_start_attempt, job)
            if include_start_attempt:
                _write_log(emulator, job)
            return
        simple.backend._jobs[job.job_id] = job  # as batch_simple does, but left running
        job.job_started_at = job.job_created_at
        job.log_stream_name = job._stream_name
        job._start_attempt()
        job.status = "RUNNING"

    simple._mark_job_as_finished = mark  # batch_simple's __getattribute__ looks here first
    job_class = type(simple.backend).__module__
    models = __import__(job_class, fromlist=["Job"])
    if not getattr(models.Job, "_seqera_shim", False):
        details = models.Job._container_details

        def container_details(self: Any) -> dict[str, Any]:
            found: dict[str, Any] = details(self)
            if self.job_stopped and self.exit_code is not None:
                found["exitCode"] = self.exit_code
            if getattr(self, "container_reason", None):
                found["reason"] = self.container_reason
            return found

        models.Job._container_details = container_details
        models.Job._seqera_shim = True


def _write_log(emulator: BatchEmulator, job: Any) -> None:
    command = list(job.container_overrides.get("command") or [])
    env = {e["name"]: e["value"] for e in job.container_overrides.get("environment") or []}
    if "index" in job.array_properties:
        env["AWS_BATCH_JOB_ARRAY_INDEX"] = str(job.array_properties["index"])
    elements = {k: f"echo {v}" for k, v in env.items() if k.startswith(ARGV_PREFIX)}
    wrapper = command[:2] == ["sh", "-c"] and command[3:4] == [MARKER]
    if elements or wrapper:
        # The real scripts (usage wrapper, array selector), with echo in front of the
        # command they end up running.
        if not elements:
            command = [*command[:4], "echo", *command[4:]]
        ran = subprocess.run(command, capture_output=True, text=True, check=True,
                             env={"PATH": os.environ["PATH"], **env, **elements})  # fmt: skip
        lines = (ran.stdout + ran.stderr).splitlines()
    else:
        lines = [" ".join(command)]
    put_log("/aws/batch/job", job._stream_name, lines)
