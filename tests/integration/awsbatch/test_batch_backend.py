"""The AWS Batch backend against moto[server]'s batch_simple, over HTTP (gaps: emulator.py)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import attrs
import boto3
import botocore.exceptions
import pytest

from seqera_core.backends import JobSpec, JobState, SubmitError
from seqera_core.backends.awsbatch import AwsBatchBackend, BatchSettings
from seqera_core.backends.awslogs import wrapped
from seqera_core.backends.registry import open_backend
from seqera_core.errors import ResourceError, UsageError
from seqera_core.history import open_history
from seqera_core.models import Accelerator, ResourceRequest
from seqera_core.outcomes import finished_record
from seqera_core.resolvers import PredictiveResolver
from seqera_core.squash import SquashMode, SquashPolicy
from seqera_core.units import GIB, MIB
from tests.integration.aws import IMAGE, job, polled, sent

if TYPE_CHECKING:
    from tests.integration.awsbatch.emulator import BatchEmulator

pytestmark = pytest.mark.integration

_SESSION: list[boto3.session.Session] = []  # one for the module: service models load once


def backend(**overrides: Any) -> AwsBatchBackend:
    squash = overrides.pop("squash", None)
    settings = BatchSettings(**{"queue": "seqera", "usage_wait": 2.0, **overrides})
    if not _SESSION:
        _SESSION.append(boto3.session.Session())
    return AwsBatchBackend(settings, squash=squash, session=_SESSION[0])


def test_a_job_runs_with_its_resources_labels_and_timeout(batch_emulator: BatchEmulator) -> None:
    batch = backend()
    bodies = sent(batch.submitter, "SubmitJob")
    spec = attrs.evolve(
        job("align sample/1", "echo", "hi", cpus=1.5, memory=3 * GIB + 1, time=30,
            accelerator=Accelerator(1)),
        labels={"team": "genomics", "aws:x": "y"}, env={"SAMPLE": "1"},
    )  # fmt: skip
    (handle,) = batch.submit([spec])
    body = bodies[0]
    assert body["containerOverrides"]["resourceRequirements"] == [
        {"type": "VCPU", "value": "2"}, {"type": "MEMORY", "value": "3073"},
        {"type": "GPU", "value": "1"}]  # fmt: skip
    assert body["containerOverrides"]["command"] == wrapped(["echo", "hi"])
    assert body["timeout"] == {"attemptDurationSeconds": 60}  # Batch's minimum
    assert body["jobName"].startswith("seqera-") and body["jobName"].endswith("-align-sample-1")
    assert body["retryStrategy"]["evaluateOnExit"][0] == {
        "onStatusReason": "Host EC2*", "action": "RETRY"}  # fmt: skip
    environment = {e["name"]: e["value"] for e in body["containerOverrides"]["environment"]}
    assert environment["SAMPLE"] == "1" and environment["SEQERA_LABEL_TEAM"] == "genomics"
    described = boto3.client("batch").describe_jobs(jobs=[handle.native_id])["jobs"][0]
    assert described["tags"]["team"] == "genomics" and described["tags"]["_aws:x"] == "y"
    assert described["tags"]["seqera-submission"] == body["jobName"][:31]
    (status,) = polled(batch, [handle])
    assert status.state is JobState.SUCCEEDED and status.exit_code == 0
    assert status.peak_memory_bytes and status.peak_memory_bytes > 0  # the wrapper's line
    assert batch.logs(handle) == "echo hi\n"  # the emulator echoes; no usage line shown


def test_one_definition_per_shape_reused_by_a_second_backend(batch_emulator: BatchEmulator) -> None:
    first = backend()
    first.submit([job("a", memory=GIB), job("b", memory=GIB), job("c", memory=2 * GIB)])
    assert first.calls["RegisterJobDefinition"] == 2
    second = backend()
    second.submit([job("d", memory=GIB)])
    assert second.calls["RegisterJobDefinition"] == 0
    assert second.calls["DescribeJobDefinitions"] == 1
    definitions = boto3.client("batch").describe_job_definitions(status="ACTIVE")
    memory = sorted(
        r["value"]
        for d in definitions["jobDefinitions"]
        for r in d["containerProperties"]["resourceRequirements"]
        if r["type"] == "MEMORY"
    )
    assert memory == ["1024", "2048"]


def test_101_jobs_take_two_describe_calls_per_poll(batch_emulator: BatchEmulator) -> None:
    batch = backend(report_usage=False)
    handles = batch.submit([job(f"j{i}") for i in range(101)])
    statuses = batch.poll(handles)
    assert batch.calls["DescribeJobs"] == 2
    assert all(s.state is JobState.SUCCEEDED for s in statuses)


@pytest.mark.parametrize(
    ("ending", "state", "cause", "code"),
    [
        ({"exit_code": 3, "status_reason": "Essential container in task exited"},
         JobState.FAILED, "other", 3),
        ({"exit_code": 137, "status_reason": "Essential container in task exited",
          "container_reason": "OutOfMemoryError: Container killed due to memory usage"},
         JobState.FAILED, "out_of_memory", 137),
        ({"exit_code": 137, "status_reason": "Job attempt duration exceeded timeout"},
         JobState.FAILED, "time_limit", 137),
        ({"exit_code": 143, "status_reason": "Host EC2 (instance i-0abc) terminated."},
         JobState.FAILED, "preempted", 143),
    ],
)  # fmt: skip
def test_how_a_job_ended(
    batch_emulator: BatchEmulator, ending: dict[str, Any], state: JobState, cause: str, code: int
) -> None:
    batch_emulator.hold()
    batch = backend(report_usage=False)
    (handle,) = batch.submit([job("ends")])
    assert batch.poll([handle])[0].state is JobState.RUNNING
    batch_emulator.finish(handle.native_id, **ending)
    (status,) = batch.poll([handle])
    assert (status.state, status.cause, status.exit_code) == (state, cause, code)
    assert status.out_of_memory is (cause == "out_of_memory")
    assert status.time_limit is (cause == "time_limit")
    assert ending["status_reason"] in (status.reason or "")


def test_cancel_terminates_the_job(batch_emulator: BatchEmulator) -> None:
    batch_emulator.hold()
    batch = backend(report_usage=False)
    handles = batch.submit([job("a"), job("b")])
    batch.cancel(handles[:1])
    assert batch.calls["TerminateJob"] == 1
    # moto records TerminateJob's reason; Batch then stops the container (SIGTERM, 143)
    batch_emulator.finish(handles[0].native_id, exit_code=143)
    (cancelled, running) = batch.poll(handles)
    assert cancelled.state is JobState.CANCELLED and cancelled.cause == "cancelled"
    assert running.state is JobState.RUNNING


def test_an_array_runs_each_jobs_own_command(batch_emulator: BatchEmulator) -> None:
    batch = backend(squash=SquashPolicy(SquashMode.ARRAY))
    bodies = sent(batch.submitter, "SubmitJob")
    specs = [job(f"e{i}", "printf", "%s\n", f"it's {i}", memory=GIB) for i in range(3)]
    handles = batch.submit([*specs, job("other", memory=2 * GIB)])
    assert [b.get("arrayProperties") for b in bodies] == [{"size": 3}, None]
    parent = handles[0].native_id.split(":")[0]
    assert [h.native_id for h in handles[:3]] == [f"{parent}:{i}" for i in range(3)]
    statuses = polled(batch, handles)
    assert all(s.state is JobState.SUCCEEDED for s in statuses)
    for i, handle in enumerate(handles[:3]):  # the real selector script chose each argv
        assert batch.logs(handle) == f"printf %s\n it's {i}\n"  # echo of its words


def test_a_job_carrying_a_key_goes_out_alone(batch_emulator: BatchEmulator) -> None:
    batch = backend(squash=SquashPolicy(SquashMode.ARRAY), report_usage=False)
    bodies = sent(batch.submitter, "SubmitJob")
    batch.submit([attrs.evolve(job("k"), key="caller-1"), job("a"), job("b")])
    assert [b.get("arrayProperties") for b in bodies] == [None, {"size": 2}]


def test_a_job_no_instance_can_hold_is_refused_before_sending(
    batch_emulator: BatchEmulator,
) -> None:
    batch = backend()
    holds = r"expected a job one instance type of job queue seqera holds: m5.large \(2 vCPUs, "
    with pytest.raises(ResourceError, match=rf"^cpus: 9 is not valid; {holds}"):
        batch.submit([job("small"), job("huge", cpus=9)])
    with pytest.raises(ResourceError, match=r"^memory: .*r5.2xlarge \(8 vCPUs, 65536 MiB, 0 GPUs"):
        batch.submit([job("huge", memory=65 * GIB)])
    with pytest.raises(ResourceError, match=r"^memory: .*g4dn.xlarge \(4 vCPUs, 16384 MiB, 1"):
        batch.submit([job("gpu and memory", memory=32 * GIB, accelerator=Accelerator(1))])
    with pytest.raises(ResourceError, match=r"^accelerator: 2 is not valid"):
        batch.submit([job("two gpus", accelerator=Accelerator(2))])
    assert batch.calls["SubmitJob"] == 0
    batch.submit([job("fits", cpus=8, memory=64 * GIB), job("gpu", accelerator=Accelerator(1))])


def test_fargate_queue_limits(batch_emulator: BatchEmulator) -> None:
    batch_emulator.create_queue("fargate", kind="FARGATE")
    batch = backend(queue="fargate", platform="FARGATE", execution_role="arn:aws:iam::1:role/x")
    with pytest.raises(ResourceError, match=r"job queue fargate holds: FARGATE \(16 vCPUs"):
        batch.submit([job("huge", cpus=17)])
    bodies = sent(batch.submitter, "SubmitJob")
    batch.submit([job("small", cpus=0.3, memory=MIB)])
    requirements = bodies[0]["containerOverrides"]["resourceRequirements"]
    assert requirements == [{"type": "VCPU", "value": "0.5"}, {"type": "MEMORY", "value": "4"}]


def test_missing_or_disabled_queue(batch_emulator: BatchEmulator) -> None:
    with pytest.raises(UsageError, match="job queue 'gone' does not exist"):
        backend(queue="gone").submit([job()])
    batch_emulator.create_queue("off", state="DISABLED")
    with pytest.raises(UsageError, match="'off' is DISABLED"):
        backend(queue="off").submit([job()])


def test_a_submit_whose_answer_is_lost_sends_one_job(batch_emulator: BatchEmulator) -> None:
    batch = backend()
    real = batch.submitter.submit_job

    def lost_answer(**params: Any) -> Any:
        real(**params)
        raise botocore.exceptions.ReadTimeoutError(endpoint_url="http://127.0.0.1")

    batch.submitter.submit_job = lost_answer
    (handle,) = batch.submit([job("once")])
    listed = boto3.client("batch").list_jobs(jobQueue="seqera", jobStatus="SUCCEEDED")
    assert [j["jobId"] for j in listed["jobSummaryList"]] == [handle.native_id]


def test_a_throttled_submit_is_sent_again_and_a_refused_one_is_not(
    batch_emulator: BatchEmulator,
) -> None:
    batch = backend()
    real, calls = batch.submitter.submit_job, []

    def throttled_once(**params: Any) -> Any:
        calls.append(params["jobName"])
        if len(calls) == 1:
            error = {"Error": {"Code": "TooManyRequestsException", "Message": "slow down"},
                     "ResponseMetadata": {"HTTPStatusCode": 429}}  # fmt: skip
            raise botocore.exceptions.ClientError(error, "SubmitJob")
        return real(**params)

    batch.submitter.submit_job = throttled_once
    batch.submit([job("again")])
    assert len(calls) == 2 and calls[0] == calls[1]
    # Refused (HTTP 400: the queue went away after its limits were read): the job is
    # neither sent again nor looked for; the one before it stays submitted.
    refused = backend()
    refused.limits("seqera")
    client = batch_emulator.client("batch")
    client.update_job_queue(jobQueue="seqera", state="DISABLED")
    client.delete_job_queue(jobQueue="seqera")
    with pytest.raises(SubmitError, match="Job queue seqera does not exist") as caught:
        refused.submit([job("a"), job("b")])
    assert caught.value.submitted == () and set(caught.value.errors) == {0}
    assert refused.calls["SubmitJob"] == 1 and refused.calls["ListJobs"] == 0


def test_a_new_backend_finds_jobs_by_the_callers_keys(batch_emulator: BatchEmulator) -> None:
    batch_emulator.create_queue("second")
    first = backend()
    specs = [attrs.evolve(job(f"k{i}", queue=q), key=f"key-{i}-{'x' * 40}")
             for i, q in enumerate(("seqera", "second"))]  # fmt: skip
    handles = first.submit(specs)
    again = backend()
    found = again.find([s.key or "" for s in specs] + ["never-sent"])
    assert {k: h.native_id for k, h in found.items()} == {
        specs[0].key: handles[0].native_id, specs[1].key: handles[1].native_id}  # fmt: skip
    assert again.poll([found[specs[1].key or ""]])[0].state is JobState.SUCCEEDED


def test_the_right_sizer_learns_from_finished_jobs(batch_emulator: BatchEmulator) -> None:
    batch = backend()
    declared = ResourceRequest(container=IMAGE, memory=60 * GIB, process="ALIGN", time=3600)
    handles = batch.submit([JobSpec(f"a{i}", ("echo", str(i)), declared) for i in range(3)])
    statuses = polled(batch, handles)
    history = open_history(":memory:")
    history.record(finished_record(declared, s, run_id="r1", engine="seqera") for s in statuses)
    peak = max(s.peak_memory_bytes or 0 for s in statuses)
    answer = PredictiveResolver(history).resolve(attrs.evolve(declared, attempt=1))
    assert answer is not None and answer.memory == math.ceil(peak * 1.2) < declared.memory


def test_opened_by_name_from_settings(batch_emulator: BatchEmulator) -> None:
    opened = open_backend("batch", queue="seqera", squash=SquashPolicy(SquashMode.ARRAY))
    assert isinstance(opened, AwsBatchBackend) and opened.squash.arrays
    with pytest.raises(UsageError, match=r"batch.queue is required .* \$SEQERA_BATCH_QUEUE"):
        open_backend("batch")
    with pytest.raises(UsageError, match="squash"):
        open_backend("batch", queue="seqera", squash=SquashPolicy(SquashMode.SQUASH))
